"""Exactly once: a statement commits with its decision's applied mark or not at all.

Real commits and separate connections: a second applier while the first holds the job, a
worker whose connection is killed between building the statement and committing, an effect
that fails once.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from queue_app.apply import apply_batch
from queue_app.models import AppliedDecision, EffectJob, StatementOfReasons
from tests.statements.conftest import decide
from tests.worker import ledger
from tests.worker.conftest import ledger as ledger_table  # noqa: F401 (a fixture)
from tests.worker.conftest import ledger_counts

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gated_posts(posts, ledger_table):  # noqa: F811 (the fixture imported above)
    posts.effect = "tests.worker.ledger.gated"
    posts.save()
    return posts


def _hold(pids: list[int], outcome: list[object]) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids.append(cursor.fetchone()[0])
        outcome.append(apply_batch())
    except Exception as exc:  # the killed worker's error: what the test expects
        outcome.append(exc)
    finally:
        connections.close_all()


def test_a_second_applier_builds_nothing_while_the_first_holds_the_job(gated_posts, alice):
    decision = decide(gated_posts, alice)
    ledger.HOLDER_INSIDE.clear()
    ledger.HOLDER_GATE.clear()
    pids: list[int] = []
    outcome: list[object] = []
    thread = threading.Thread(target=_hold, args=(pids, outcome), name="holder")
    thread.start()
    try:
        assert ledger.HOLDER_INSIDE.wait(30), "the holder never reached the effect"
        # The holder has built the statement, uncommitted, and holds the job's lock.
        assert apply_batch() == 0
        assert not StatementOfReasons.objects.exists()
    finally:
        ledger.HOLDER_GATE.set()
        thread.join(60)
    assert outcome == [1]
    assert apply_batch() == 0
    assert list(StatementOfReasons.objects.values_list("decision_id", flat=True)) == [decision.pk]


def test_a_worker_killed_before_its_commit_leaves_the_statement_to_the_next(gated_posts, alice):
    decision = decide(gated_posts, alice)
    ledger.HOLDER_INSIDE.clear()
    ledger.HOLDER_GATE.clear()
    pids: list[int] = []
    outcome: list[object] = []
    thread = threading.Thread(target=_hold, args=(pids, outcome), name="holder")
    thread.start()
    try:
        assert ledger.HOLDER_INSIDE.wait(30), "the holder never reached the effect"
        with connection.cursor() as cursor:
            # As SIGKILL would: the server ends the worker's session, its transaction with it.
            cursor.execute("SELECT pg_terminate_backend(%s)", [pids[0]])
            assert cursor.fetchone()[0] is True
    finally:
        ledger.HOLDER_GATE.set()
        thread.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], Exception)
    assert not StatementOfReasons.objects.exists()
    assert not AppliedDecision.objects.filter(decision=decision).exists()
    # The next worker takes the job up: one statement, one effect.
    assert apply_batch() == 1
    assert apply_batch() == 0
    assert StatementOfReasons.objects.filter(decision=decision).count() == 1
    assert ledger_counts() == {decision.pk: 1}


def test_an_effect_that_fails_takes_its_statement_with_it_until_the_retry(
    posts,
    alice,
    ledger_table,  # noqa: F811
):
    posts.effect = "tests.worker.ledger.flaky"
    posts.save()
    decision = decide(posts, alice)
    ledger.FAILED_ONCE.discard(decision.pk)
    assert apply_batch() == 1  # attempted, failed: rolled back to its savepoint
    assert not StatementOfReasons.objects.exists()
    EffectJob.objects.filter(decision=decision).update(next_attempt_at="2000-01-01T00:00:00Z")
    assert apply_batch() == 1
    assert StatementOfReasons.objects.filter(decision=decision).count() == 1
    assert ledger_counts() == {decision.pk: 1}
