"""Two appliers on separate connections never carry out one item's effects out of order."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from queue_app.apply import apply_batch
from queue_app.models import AppliedDecision, Decision, EffectJob, Verdict
from tests.worker import ledger
from tests.worker.conftest import decide

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_second_applier_never_takes_a_later_job_of_an_item_whose_earlier_job_is_in_hand(
    ledger_queue, alice, supervisor
):
    ledger_queue.effect = "tests.worker.ledger.gated"
    ledger_queue.save()
    [original, other] = decide(ledger_queue, alice, 2, verdict=Verdict.REJECT)
    ledger.HOLDER_INSIDE.clear()
    ledger.HOLDER_GATE.clear()
    held: list[int] = []

    def holder() -> None:
        try:
            held.append(apply_batch(batch_size=1))
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder, name="holder")
    thread.start()
    try:
        assert ledger.HOLDER_INSIDE.wait(30), "the holder never reached its first decision"
        in_hand = original if _holds(original) else other
        # A later decision of the held item arrives while its effect is in flight. (The
        # overturn service would wait for the holder's key-share lock on the decision; the
        # ordering rule must not depend on that, so the row is written as any writer could.)
        with transaction.atomic():
            later = Decision.objects.insert(
                item_id=in_hand.item_id,
                queue_id=in_hand.queue_id,
                reviewer_id=supervisor.pk,
                verdict=Verdict.OVERTURN,
                reason_code="reviewer_error",
                evidence_hash=in_hand.evidence_hash,
                note="corrected while the first effect was in flight",
                supersedes_id=in_hand.pk,
                corrected_verdict=Verdict.APPROVE,
            )
        # This connection may take the other item's job, never the later job of the held item.
        taken = apply_batch(batch_size=10)
        done_while_held = set(
            EffectJob.objects.filter(done_at__isnull=False).values_list("decision_id", flat=True)
        )
    finally:
        ledger.HOLDER_GATE.set()
        thread.join(60)

    assert held == [1]
    assert later.pk not in done_while_held
    assert taken == 1
    assert apply_batch(batch_size=10) == 1
    calls = ledger.calls()
    assert calls.index(in_hand.pk) < calls.index(later.pk)
    assert sorted(calls) == sorted([original.pk, other.pk, later.pk])
    assert AppliedDecision.objects.get(decision=in_hand).status == "applied"


def _holds(decision: Decision) -> bool:
    """Whether the holder's open batch has this decision's job locked."""
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM queue_app_effectjob WHERE decision_id = %s "
            "FOR UPDATE SKIP LOCKED)",
            [decision.pk],
        )
        return cursor.fetchone()[0]
