"""Auto-escalation of items that keep being abandoned."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from queue_app import effects
from queue_app.apply import apply_one
from queue_app.errors import StaleLease
from queue_app.models import AppliedDecision, Decision, EffectJob, ItemEvent, ReviewItem
from queue_app.services import (
    claim_next,
    create_item,
    escalate_abandoned,
    release_lease,
    submit_decision,
)
from tests.api.conftest import caller_for, intake_body, make_client
from tests.conftest import backdate_lease, make_items, run_in_threads, shown_hash

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


# -- the escalate verdict's item: linked to its decision, never to a key -----------------------


def _escalate_verdict(queue, reviewer, prefix="esc"):
    """Decide one fresh item 'escalate' through the services; return the decision."""
    make_items(queue, 1, prefix=prefix)
    lease = claim_next(queue=queue, reviewer=reviewer)
    return submit_decision(
        item_id=lease.pk,
        reviewer=reviewer,
        lease_token=lease.lease_token,
        verdict="escalate",
        reason_code="policy_gap",
        evidence_hash=shown_hash(lease),
    )


def _plant(queue, key, *, source_hash, payload):
    """An intake client claims a key first, through the API, as an attacker would."""
    _, token = make_client("mallory-upstream", [queue])
    reply = caller_for(token).post(
        "/items",
        intake_body(queue=queue.slug, key=key, source_hash=source_hash, payload=payload),
    )
    assert reply.status == 201
    return ReviewItem.objects.get(pk=reply.body["id"])


def _assert_escalated_once(decision):
    job = EffectJob.objects.get(decision=decision)
    assert (job.done_at is not None, job.dead) == (True, False)
    opened = ReviewItem.objects.get(escalated_by_decision=decision)
    origin = decision.item
    assert opened.escalated_from_id == origin.pk
    assert opened.queue_id == decision.queue.escalation_queue_id
    assert (opened.subject, opened.payload) == (origin.subject, origin.payload)
    assert opened.idempotency_key is None and opened.created_by_client_id is None
    assert AppliedDecision.objects.filter(decision=decision).exists()
    return opened


def test_a_planted_escalation_key_does_not_capture_the_escalation(queue, alice):
    decision = _escalate_verdict(queue, alice)
    origin = decision.item
    planted = _plant(
        queue.escalation_queue,
        f"escalation-of-decision-{decision.pk}",
        source_hash=origin.source_hash,
        payload={"attacker": "evidence"},
    )

    assert apply_one()

    # The escalation is a new item pointing at its origin, not the planted one adopted.
    assert ReviewItem.objects.filter(escalated_from=origin).exclude(pk=planted.pk).count() == 1
    opened = _assert_escalated_once(decision)
    assert opened.pk != planted.pk
    planted.refresh_from_db()
    assert (planted.escalated_from_id, planted.payload) == (None, {"attacker": "evidence"})


def test_a_planted_key_in_another_queue_cannot_kill_the_escalation(queue, alice):
    decision = _escalate_verdict(queue, alice)
    _plant(
        queue,
        f"escalation-of-decision-{decision.pk}",
        source_hash="something-else",
        payload={"attacker": "evidence"},
    )

    assert apply_one()

    _assert_escalated_once(decision)


@pytest.mark.django_db(transaction=True)
def test_the_escalate_effect_run_twice_opens_one_item(queue, alice):
    decision = _escalate_verdict(queue, alice)
    loaded = Decision.objects.select_related("item", "queue__escalation_queue")

    def escalate(i: int) -> int:
        # Each run in its own transaction on its own connection, committed: as two workers
        # (or one after a crash between the effect and its applied row) would.
        with transaction.atomic():
            return effects.escalate(loaded.get(pk=decision.pk))["escalation_item_id"]

    first, second = run_in_threads(2, escalate)
    third = escalate(2)

    assert first == second == third
    assert ReviewItem.objects.filter(escalated_from=decision.item).count() == 1
    assert ReviewItem.objects.get(escalated_by_decision=decision).pk == first


def test_an_escalation_item_must_name_a_decision_on_its_origin(queue, alice):
    decision = _escalate_verdict(queue, alice)
    stranger = make_items(queue, 1, prefix="stranger")[0]
    common = {"queue": queue.escalation_queue, "subject": "x", "idempotency_key": None}

    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewItem.objects.create(**common, escalated_from=stranger, escalated_by_decision=decision)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewItem.objects.create(**common, escalated_by_decision=decision)
    # Without a decision, an item must carry a key.
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewItem.objects.create(**common, escalated_from=decision.item)


def test_the_escalation_link_never_changes(queue, alice):
    decision = _escalate_verdict(queue, alice)
    assert apply_one()
    opened = ReviewItem.objects.get(escalated_by_decision=decision)
    later = _escalate_verdict(queue, alice, prefix="later")

    with pytest.raises(IntegrityError, match="never change"), transaction.atomic():
        ReviewItem.objects.filter(pk=opened.pk).update(escalated_by_decision=None)
    with pytest.raises(IntegrityError, match="never change"), transaction.atomic():
        ReviewItem.objects.filter(pk=later.item_id).update(idempotency_key="renamed")


def test_auto_escalation_keeps_a_key_in_the_scope_it_was_sent_to(queue, alice):
    (moving,) = make_items(queue, 1, prefix="same")
    # The same key sent to the escalation queue (same no-client scope): another item.
    resident, created = create_item(
        queue=queue.escalation_queue, subject="resident", payload={}, idempotency_key="kyc-same-0"
    )
    assert created and resident.pk != moving.pk

    # Moving the first item into the second's queue collides with nothing: its key stays
    # scoped to the queue it was sent to.
    _abandon(queue, alice, queue.escalation_threshold)
    assert escalate_abandoned() == 1

    moved = ReviewItem.objects.get(pk=moving.pk)
    assert (moved.queue_id, moved.intake_queue_id) == (queue.escalation_queue_id, queue.pk)
    # A replay into the queue it was sent to still finds it, not a fresh copy.
    again, created = create_item(
        queue=queue, subject="same 0", payload={}, idempotency_key="kyc-same-0", source_hash="h0"
    )
    assert (again.pk, created) == (moving.pk, False)
