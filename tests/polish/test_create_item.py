"""An escalation item is linked to its origin and its decision in the INSERT itself."""

from __future__ import annotations

import pytest

from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import open_escalation
from tests.conftest import make_items
from tests.worker.conftest import decide

pytestmark = pytest.mark.django_db


def test_it_links_an_escalated_item_to_its_origin_and_decision(queue, alice):
    [decision] = decide(queue, alice, 1, verdict="escalate")

    item, created = open_escalation(decision=decision, target=queue.escalation_queue)

    assert created
    row = ReviewItem.objects.get(pk=item.pk)
    assert (row.escalated_from_id, row.escalated_by_decision_id) == (decision.item_id, decision.pk)
    # Created once, like any item: the link is part of the creation, not a later update.
    assert ItemEvent.objects.filter(item=item).count() == 1


def test_a_replay_returns_the_escalated_item_it_already_made(queue, alice):
    [decision] = decide(queue, alice, 1, verdict="escalate")
    first, _ = open_escalation(decision=decision, target=queue.escalation_queue)

    again, created = open_escalation(decision=decision, target=queue.escalation_queue)

    assert (again.pk, created) == (first.pk, False)
    assert ReviewItem.objects.filter(escalated_from=decision.item).count() == 1


def test_items_from_intake_have_no_origin(queue):
    (item,) = make_items(queue, 1)
    row = ReviewItem.objects.get(pk=item.pk)
    assert (row.escalated_from_id, row.escalated_by_decision_id) == (None, None)
