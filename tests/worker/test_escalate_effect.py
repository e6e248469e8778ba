"""The escalate effect: one escalation item per escalate verdict, however often it is tried."""

from __future__ import annotations

import pytest

from queue_app import effects
from queue_app.apply import apply_batch, apply_one
from queue_app.models import EffectJob, ReviewItem, Verdict
from tests.worker.conftest import decide

pytestmark = pytest.mark.django_db


def test_an_escalate_verdict_opens_one_item_in_the_escalation_queue(queue, alice):
    decisions = decide(queue, alice, 3, verdict=Verdict.ESCALATE)

    assert apply_batch(batch_size=10) == 3

    escalated = ReviewItem.objects.filter(queue=queue.escalation_queue).order_by("pk")
    assert escalated.count() == 3
    for decision, item in zip(decisions, escalated, strict=True):
        origin = decision.item
        assert item.escalated_from_id == origin.pk
        assert item.priority == origin.priority + 10
        assert (item.subject, item.payload) == (origin.subject, origin.payload)
        assert item.trace_id == origin.trace_id
        assert item.state == "pending"
        # Linked to its decision, not named by a key a client could have claimed first.
        assert item.escalated_by_decision_id == decision.pk
        assert item.idempotency_key is None


def test_an_escalation_rolled_back_by_a_failure_is_opened_once_on_retry(queue, alice, monkeypatch):
    [decision] = decide(queue, alice, 1, verdict=Verdict.ESCALATE)
    real_escalate = effects.BUILTIN_EFFECTS["escalate"]
    calls = []

    def escalate_then_crash_once(d):
        result = real_escalate(d)
        calls.append(d.pk)
        if len(calls) == 1:
            raise ConnectionResetError("lost the receiver after opening the item")
        return result

    monkeypatch.setitem(effects.BUILTIN_EFFECTS, "escalate", escalate_then_crash_once)

    assert apply_one()
    assert not ReviewItem.objects.filter(escalated_from=decision.item).exists()
    EffectJob.objects.update(next_attempt_at=decision.created_at)
    assert apply_one()

    assert calls == [decision.pk, decision.pk]
    assert ReviewItem.objects.filter(escalated_from=decision.item).count() == 1
    assert EffectJob.objects.get(decision=decision).done_at is not None


def test_an_escalation_is_not_opened_twice_when_its_job_comes_back(queue, alice):
    [decision] = decide(queue, alice, 1, verdict=Verdict.ESCALATE)
    assert apply_one()
    EffectJob.objects.filter(decision=decision).update(done_at=None)

    assert apply_one()

    assert ReviewItem.objects.filter(escalated_from=decision.item).count() == 1


def test_an_escalation_without_an_escalation_queue_goes_dead_for_an_operator(queue, alice):
    [decision] = decide(queue, alice, 1, verdict=Verdict.ESCALATE)
    queue.escalation_queue = None
    queue.save()

    assert apply_one()

    job = EffectJob.objects.get(decision=decision)
    assert job.dead
    assert "has no escalation queue" in job.last_error
