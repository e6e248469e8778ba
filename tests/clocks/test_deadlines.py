"""Deadlines: set at intake, paused by holds (due_at moves by exactly the time held), kept on
escalation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from queue_app.errors import InvalidDeadline
from queue_app.models import Decision, ItemEvent, ReviewItem
from queue_app.services import (
    claim_next,
    deadline_words,
    escalate_abandoned,
    hold_item,
    is_breached,
    open_escalation,
    replace_evidence,
    submit_decision,
)
from tests.clocks.helpers import add_hold_reasons, item, make_hold_due
from tests.conftest import backdate_lease, shown_hash

pytestmark = pytest.mark.django_db


def test_an_explicit_due_at_is_kept_even_when_already_past(queue):
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert item(queue, "a", due_at=when).due_at == when


def test_sla_seconds_count_from_receipt(queue):
    it = item(queue, "a", sla_seconds=3600)
    # receipt is the moment intake accepted it; created_at is stamped microseconds later
    assert timedelta(0) <= it.created_at + timedelta(hours=1) - it.due_at < timedelta(seconds=1)


def test_the_queues_default_sla_applies_when_intake_gives_none(queue):
    assert item(queue, "none").due_at is None
    queue.default_sla = timedelta(hours=8)
    queue.save()
    it = item(queue, "default")
    assert (
        timedelta(hours=8) - timedelta(seconds=1) < it.due_at - it.created_at <= timedelta(hours=8)
    )
    # an explicit SLA wins over the default
    assert item(queue, "own", sla_seconds=60).due_at < it.due_at


@pytest.mark.parametrize(
    "fields",
    [
        {"due_at": datetime(2027, 1, 1, tzinfo=UTC), "sla_seconds": 60},
        {"due_at": datetime(2027, 1, 1)},  # naive: which zone?
        {"sla_seconds": 0},
        {"sla_seconds": -5},
        {"sla_seconds": 10**12},
    ],
)
def test_bad_deadlines_are_refused_before_anything_is_written(queue, fields):
    with pytest.raises(InvalidDeadline):
        item(queue, "bad", **fields)
    assert not ReviewItem.objects.exists()


def _lease_and_hold(queue, reviewer, *, due_at, hours):
    add_hold_reasons(queue)
    it = item(queue, "k", due_at=due_at)
    leased = claim_next(queue=queue, reviewer=reviewer)
    assert leased.pk == it.pk
    return hold_item(
        item_id=it.pk,
        reviewer=reviewer,
        lease_token=leased.lease_token,
        reason_code="awaiting_documents",
        hold_until=timezone.now() + timedelta(hours=hours),
    )


def test_a_full_hold_moves_the_deadline_by_the_hold_and_the_claim_leaves_it(queue, alice, bob):
    due = timezone.now() + timedelta(hours=3)
    held = _lease_and_hold(queue, alice, due_at=due, hours=10)
    assert held["due_at"] == due + (held["hold_until"] - held["held_at"])
    event = ItemEvent.objects.get(item_id=held["id"], kind="held")
    assert datetime.fromisoformat(event.detail["due_at_before"]) == due
    make_hold_due(held["id"])  # the hold ran its course (same length, earlier)
    pushed = ReviewItem.objects.get(pk=held["id"]).due_at
    assert claim_next(queue=queue, reviewer=bob).pk == held["id"]
    assert ReviewItem.objects.get(pk=held["id"]).due_at == pushed == held["due_at"]


def test_an_early_resume_gives_back_the_unused_part_of_the_hold(queue, alice, bob):
    due = timezone.now() + timedelta(hours=3)
    held = _lease_and_hold(queue, alice, due_at=due, hours=48)
    replace_evidence(item_id=held["id"], actor=bob, payload={"new": True})
    resumed = ItemEvent.objects.get(item_id=held["id"], kind="resumed")
    # due_at moved by exactly the time spent on hold: from held_at to the resume.
    row = ReviewItem.objects.get(pk=held["id"])
    assert row.due_at == due + (resumed.at - held["held_at"])
    assert datetime.fromisoformat(resumed.detail["due_at"]) == row.due_at


def test_a_hold_without_a_deadline_invents_none(queue, alice, bob):
    held = _lease_and_hold(queue, alice, due_at=None, hours=1)
    assert held["due_at"] is None
    replace_evidence(item_id=held["id"], actor=bob, payload={"new": True})
    assert ReviewItem.objects.get(pk=held["id"]).due_at is None


def test_auto_escalation_keeps_the_deadline(queue, alice):
    due = timezone.now() + timedelta(hours=1)
    it = item(queue, "k", due_at=due)
    for _ in range(queue.escalation_threshold):
        claim_next(queue=queue, reviewer=alice)
        backdate_lease(it.pk)
    assert escalate_abandoned() == 1
    moved = ReviewItem.objects.get(pk=it.pk)
    assert moved.queue_id == queue.escalation_queue_id and moved.due_at == due


def test_an_escalate_verdict_opens_its_item_with_the_original_deadline(queue, alice):
    due = timezone.now() + timedelta(hours=5)
    it = item(queue, "k", due_at=due, subject_key="cust-1")
    lease = claim_next(queue=queue, reviewer=alice)
    decision = submit_decision(
        item_id=it.pk,
        reviewer=alice,
        lease_token=lease.lease_token,
        verdict="escalate",
        reason_code="policy_gap",
        evidence_hash=shown_hash(lease),
    )
    opened, _ = open_escalation(
        decision=Decision.objects.select_related("item").get(pk=decision.pk),
        target=queue.escalation_queue,
    )
    assert (opened.due_at, opened.subject_key) == (due, "cust-1")


@pytest.mark.parametrize(
    ("offset", "words"),
    [
        (timedelta(hours=2, minutes=10, seconds=30), "due in 2 h 10 min"),
        (timedelta(minutes=-5, seconds=-10), "overdue by 5 min"),
        (timedelta(days=2, hours=3), "due in 2 d 3 h"),
        (timedelta(seconds=40), "due in 40 s"),
        (timedelta(hours=-1), "overdue by 1 h"),
    ],
)
def test_the_deadline_in_words(offset, words):
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert deadline_words(due_at=now + offset, now=now) == words
    assert is_breached(due_at=now + offset, now=now) == (offset < timedelta(0))


def test_no_deadline_no_words():
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert deadline_words(due_at=None, now=now) == ""
    assert is_breached(due_at=None, now=now) is False
