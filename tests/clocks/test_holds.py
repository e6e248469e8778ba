"""Holds: fenced like every write, never claimed early, back by themselves or on new evidence."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from queue_app.errors import InvalidHoldReason, InvalidHoldTime, NotPermitted, StaleLease
from queue_app.models import HoldReason, ItemEvent, ReviewItem
from queue_app.services import (
    claim_batch,
    claim_next,
    escalate_abandoned,
    hold_item,
    release_lease,
    replace_evidence,
)
from tests.clocks.helpers import add_hold_reasons, item, make_hold_due
from tests.conftest import backdate_lease, make_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def held_setup(queue, alice):
    add_hold_reasons(queue)
    it = item(queue, "k1", due_at=timezone.now() + timedelta(hours=3))
    leased = claim_next(queue=queue, reviewer=alice)
    assert leased.pk == it.pk
    return leased


def _hold(leased, who, *, hours: float = 2, code: str = "awaiting_documents", token=None):
    return hold_item(
        item_id=leased.pk,
        reviewer=who,
        lease_token=token or leased.lease_token,
        reason_code=code,
        hold_until=timezone.now() + timedelta(hours=hours),
    )


def _kinds(item_id: int) -> list[str]:
    return list(
        ItemEvent.objects.filter(item_id=item_id).order_by("id").values_list("kind", flat=True)
    )


def test_a_held_item_is_never_claimed_before_its_time(queue, alice, bob, held_setup):
    _hold(held_setup, alice)
    for reviewer in (alice, bob):
        assert claim_next(queue=queue, reviewer=reviewer) is None
    assert claim_batch(queue=queue, worker=bob, n=200, ttl=timedelta(minutes=1)) == []
    # Not abandonment either: the escalation sweep leaves it alone.
    assert escalate_abandoned() == 0
    assert ReviewItem.objects.get(pk=held_setup.pk).state == "held"


def test_a_due_hold_is_claimed_by_the_next_claim_with_no_sweep(queue, alice, bob, held_setup):
    _hold(held_setup, alice)
    make_hold_due(held_setup.pk)
    got = claim_next(queue=queue, reviewer=bob)
    assert got is not None and got.pk == held_setup.pk
    row = ReviewItem.objects.get(pk=held_setup.pk)
    assert (row.state, row.lease_owner_id) == ("leased", bob.pk)
    assert (row.hold_until, row.held_at, row.hold_reason_id) == (None, None, None)
    assert _kinds(row.pk)[-3:] == ["held", "resumed", "claimed"]
    resumed = ItemEvent.objects.get(item_id=row.pk, kind="resumed")
    assert resumed.detail["cause"] == "hold_ended" and resumed.actor_id is None


def test_the_hold_is_fenced_by_the_lease_token(queue, alice, bob, held_setup):
    with pytest.raises(StaleLease):
        _hold(held_setup, alice, token=uuid.uuid4())
    with pytest.raises(StaleLease):
        _hold(held_setup, bob)  # bob names alice's token: the owner must match too
    backdate_lease(held_setup.pk)
    claim_next(queue=queue, reviewer=bob)  # bob takes it over after alice's lease ran out
    with pytest.raises(StaleLease) as refused:
        _hold(held_setup, alice)
    assert refused.value.what == "taken"
    assert ReviewItem.objects.get(pk=held_setup.pk).state == "leased"
    assert "held" not in _kinds(held_setup.pk)


def test_a_released_lease_cannot_be_put_on_hold(queue, alice, held_setup):
    release_lease(item_id=held_setup.pk, reviewer=alice, lease_token=held_setup.lease_token)
    with pytest.raises(StaleLease):
        _hold(held_setup, alice)


def test_only_the_queues_own_active_hold_reasons_are_accepted(queue, alice, held_setup):
    other = make_queue("aml")
    HoldReason.objects.create(queue=other, code="aml_only", label="AML only")
    HoldReason.objects.filter(queue=queue, code="customer_contacted").update(
        retired_at=timezone.now()
    )
    for code in ("aml_only", "customer_contacted", "nonsense", ""):
        with pytest.raises(InvalidHoldReason):
            _hold(held_setup, alice, code=code)
    assert ReviewItem.objects.get(pk=held_setup.pk).state == "leased"


def test_the_resume_time_is_bounded_by_the_queues_max_hold(queue, alice, held_setup):
    queue.max_hold = timedelta(days=1)
    queue.save()
    for hours in (-1, 0, 24.5, 24 * 400):
        with pytest.raises(InvalidHoldTime):
            _hold(held_setup, alice, hours=hours)
    assert ReviewItem.objects.get(pk=held_setup.pk).state == "leased"
    _hold(held_setup, alice, hours=23.9)


def test_a_reviewer_who_lost_access_cannot_hold(queue, alice, held_setup):
    alice.groups.clear()
    with pytest.raises(NotPermitted):
        _hold(held_setup, alice)


def test_access_revoked_after_the_services_check_still_refuses_the_hold(
    queue, alice, held_setup, monkeypatch
):
    """The statement checks access itself: an admin's revocation that lands between the
    service's check and the write (a race no check before the write can close) refuses it."""
    from queue_app.services import holds

    checked = holds.user_can_review

    def check_then_revoke(*, user, queue):
        allowed = checked(user=user, queue=queue)
        alice.groups.clear()
        return allowed

    monkeypatch.setattr(holds, "user_can_review", check_then_revoke)
    with pytest.raises(NotPermitted):
        _hold(held_setup, alice)
    assert ReviewItem.objects.get(pk=held_setup.pk).state == "leased"
    assert "held" not in _kinds(held_setup.pk)


def test_a_hold_is_not_counted_as_an_abandoned_lease(queue, alice, held_setup):
    assert ReviewItem.objects.get(pk=held_setup.pk).lease_count == 1
    _hold(held_setup, alice)
    assert ReviewItem.objects.get(pk=held_setup.pk).lease_count == 0


def test_replacing_evidence_resumes_a_hold_at_once(queue, alice, bob, held_setup):
    _hold(held_setup, alice, hours=48)
    replace_evidence(item_id=held_setup.pk, actor=bob, payload={"documents": ["passport"]})
    row = ReviewItem.objects.get(pk=held_setup.pk)
    assert row.state == "pending" and row.hold_until is None
    assert _kinds(row.pk)[-2:] == ["evidence_replaced", "resumed"]
    assert ItemEvent.objects.get(item_id=row.pk, kind="resumed").detail["cause"] == (
        "evidence_replaced"
    )
    assert claim_next(queue=queue, reviewer=bob).pk == row.pk


def test_the_database_refuses_half_a_hold_and_another_queues_reason(queue, alice, held_setup):
    other = make_queue("aml")
    foreign = HoldReason.objects.create(queue=other, code="x", label="x")
    cases = [
        # held without a reason / until
        "UPDATE queue_app_reviewitem SET state = 'held', lease_owner_id = NULL, "
        "lease_token = NULL, lease_expires = NULL, held_at = now(), "
        "hold_until = now() + interval '1 hour' WHERE id = %(id)s",
        # a reason of another queue
        "UPDATE queue_app_reviewitem SET state = 'held', lease_owner_id = NULL, "
        "lease_token = NULL, lease_expires = NULL, held_at = now(), "
        f"hold_until = now() + interval '1 hour', hold_reason_id = {foreign.pk} "
        "WHERE id = %(id)s",
        # hold columns on a pending row
        "UPDATE queue_app_reviewitem SET state = 'pending', lease_owner_id = NULL, "
        "lease_token = NULL, lease_expires = NULL, hold_until = now() WHERE id = %(id)s",
    ]
    for statement in cases:
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(statement, {"id": held_setup.pk})


def test_a_late_write_on_a_held_item_says_it_is_on_hold(queue, alice, held_setup):
    from queue_app.services import submit_decision
    from tests.conftest import shown_hash

    _hold(held_setup, alice)
    with pytest.raises(StaleLease) as refused:
        submit_decision(
            item_id=held_setup.pk,
            reviewer=alice,
            lease_token=held_setup.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(held_setup),
        )
    assert refused.value.what == "on_hold" and "on hold until" in refused.value.message
    assert ReviewItem.objects.get(pk=held_setup.pk).state == "held"
