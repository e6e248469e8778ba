"""Two appliers on separate connections: the second walks past what the first holds."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from queue_app.apply import apply_batch
from queue_app.models import AppliedDecision
from tests.worker import ledger
from tests.worker.conftest import decide, ledger_counts

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_second_applier_skips_jobs_held_by_an_open_batch_and_takes_the_rest(ledger_queue, alice):
    ledger_queue.effect = "tests.worker.ledger.gated"
    ledger_queue.save()
    decisions = decide(ledger_queue, alice, 10)
    ledger.HOLDER_INSIDE.clear()
    ledger.HOLDER_GATE.clear()
    held: list[int] = []

    def holder() -> None:
        try:
            held.append(apply_batch(batch_size=4))
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder, name="holder")
    thread.start()
    try:
        assert ledger.HOLDER_INSIDE.wait(30), "the holder never reached its first decision"
        # The holder's transaction is open with four job rows locked. This connection must
        # neither wait for them nor take them.
        taken = apply_batch(batch_size=10)
        applied_while_held = set(AppliedDecision.objects.values_list("decision_id", flat=True))
    finally:
        ledger.HOLDER_GATE.set()
        thread.join(60)

    assert taken == 6
    assert held == [4]
    assert len(applied_while_held) == 6
    assert ledger_counts() == {d.pk: 1 for d in decisions}
