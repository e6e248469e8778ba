"""Auto-escalation of items that keep being abandoned."""

from __future__ import annotations

import pytest

from queue_app.errors import StaleLease
from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import claim_next, escalate_abandoned, release_lease, submit_decision
from tests.conftest import backdate_lease, make_items, shown_hash

pytestmark = pytest.mark.django_db


def _abandon(queue, reviewer, times):
    last = None
    for _ in range(times):
        last = claim_next(queue=queue, reviewer=reviewer)
        backdate_lease(last.pk)
    return last


def test_it_escalates_when_lease_count_reaches_the_threshold(queue, alice):
    item = make_items(queue, 1)[0]
    stale = _abandon(queue, alice, queue.escalation_threshold)
    assert stale.pk == item.pk and stale.lease_count == 3
    # The abandoned item is no longer handed out in its own queue ...
    assert claim_next(queue=queue, reviewer=alice) is None
    assert escalate_abandoned() == 1
    row = ReviewItem.objects.get(pk=item.pk)
    assert row.queue_id == queue.escalation_queue_id
    assert (row.state, row.priority, row.lease_token) == ("pending", 10, None)
    event = ItemEvent.objects.get(item=row, kind="auto_escalated")
    assert event.detail["from_queue_id"] == queue.pk and event.detail["lease_count"] == 3
    # ... and a late submit on the old token is refused.
    with pytest.raises(StaleLease):
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=stale.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(stale),
        )


def test_it_leaves_an_item_under_a_live_lease(queue, alice):
    make_items(queue, 1)
    _abandon(queue, alice, 2)
    live = claim_next(queue=queue, reviewer=alice)
    assert live.lease_count == 3
    assert escalate_abandoned() == 0
    assert ReviewItem.objects.get(pk=live.pk).queue_id == queue.pk


def test_it_escalates_a_released_item_at_the_threshold(queue, alice):
    make_items(queue, 1)
    _abandon(queue, alice, 2)
    third = claim_next(queue=queue, reviewer=alice)
    release_lease(item_id=third.pk, reviewer=alice, lease_token=third.lease_token)
    assert escalate_abandoned() == 1


def test_it_leaves_items_below_the_threshold(queue, alice):
    make_items(queue, 1)
    _abandon(queue, alice, 2)
    assert escalate_abandoned() == 0


def test_it_does_nothing_without_an_escalation_queue(queue, alice):
    escalation = queue.escalation_queue
    make_items(escalation, 1)
    _abandon(escalation, alice, 5)
    assert escalate_abandoned() == 0
    assert claim_next(queue=escalation, reviewer=alice).lease_count == 6
