"""create_item links an escalation to its origin in the INSERT itself."""

from __future__ import annotations

import pytest

from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import create_item
from tests.conftest import make_items

pytestmark = pytest.mark.django_db


def test_it_links_an_escalated_item_to_its_origin(queue):
    (origin,) = make_items(queue, 1)

    item, created = create_item(
        queue=queue.escalation_queue,
        subject=origin.subject,
        payload=origin.payload,
        idempotency_key="escalation-of-decision-1",
        escalated_from=origin,
    )

    assert created
    assert ReviewItem.objects.get(pk=item.pk).escalated_from_id == origin.pk
    # Created once, like any item: the link is part of the creation, not a later update.
    assert ItemEvent.objects.filter(item=item).count() == 1


def test_a_replay_returns_the_escalated_item_it_already_made(queue):
    (origin,) = make_items(queue, 1)
    fields = {
        "queue": queue.escalation_queue,
        "subject": origin.subject,
        "payload": origin.payload,
        "idempotency_key": "escalation-of-decision-1",
        "escalated_from": origin,
    }
    first, _ = create_item(**fields)

    again, created = create_item(**fields)

    assert (again.pk, created) == (first.pk, False)
    assert ReviewItem.objects.filter(escalated_from=origin).count() == 1


def test_items_from_intake_have_no_origin(queue):
    (item,) = make_items(queue, 1)
    assert ReviewItem.objects.get(pk=item.pk).escalated_from_id is None
