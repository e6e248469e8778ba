"""The real `run_apply_worker` process: crashes, company, signals, wake-ups, the sweep."""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.backends.signals import connection_created

from queue_app.management.commands.run_apply_worker import _configure_session
from queue_app.models import AppliedDecision, EffectJob, ReviewItem
from tests.conftest import make_items
from tests.worker.conftest import decide, ledger_counts, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = ("--poll-interval", "0.1", "--escalate-every", "0")


def _applied() -> int:
    return AppliedDecision.objects.count()


def _assert_each_applied_exactly_once(decisions) -> None:
    ids = {d.pk for d in decisions}
    assert set(AppliedDecision.objects.values_list("decision_id", flat=True)) == ids
    assert ledger_counts() == dict.fromkeys(ids, 1)
    assert EffectJob.objects.filter(done_at__isnull=True).count() == 0


def test_it_applies_every_decision_exactly_once_when_killed_at_random(
    ledger_queue, alice, spawn_worker, worker_env
):
    decisions = decide(ledger_queue, alice, 1000)
    # A few milliseconds inside each decision's transaction, so kills land mid-apply.
    env = worker_env(LEDGER_MAX_SLEEP="0.01")
    rng = random.Random()
    kills = 0
    while kills < 20:
        before = _applied()
        assert before < len(decisions), f"backlog drained after only {kills} kills"
        worker = spawn_worker("--batch-size", str(rng.choice([1, 5, 20])), *FAST, env=env)
        wait_until(lambda: _applied() > before, what="the worker to apply something")  # noqa: B023
        time.sleep(rng.uniform(0, 0.2))
        worker.signal(signal.SIGKILL)
        assert worker.wait() == -signal.SIGKILL
        kills += 1

    survivor = spawn_worker("--once", "--batch-size", "50", *FAST, env=env)
    assert survivor.wait(timeout=120) == 0, survivor.output()

    _assert_each_applied_exactly_once(decisions)


def test_several_workers_share_the_outbox_without_applying_anything_twice(
    ledger_queue, alice, spawn_worker, worker_env
):
    env = worker_env(LEDGER_MAX_SLEEP="0.01")
    workers = [spawn_worker("--batch-size", "5", *FAST, env=env) for _ in range(3)]
    for worker in workers:
        wait_until(lambda: "apply worker started" in worker.output(), what="worker start")  # noqa: B023

    decisions = decide(ledger_queue, alice, 200)
    wait_until(lambda: _applied() == len(decisions), what="all decisions applied")
    for worker in workers:
        worker.signal(signal.SIGTERM)
    assert [worker.wait() for worker in workers] == [0, 0, 0]

    _assert_each_applied_exactly_once(decisions)
    busy = [w for w in workers if "decision applied" in w.output()]
    assert len(busy) >= 2, "the workers did not actually share the work"


def test_sigterm_finishes_the_decision_in_hand_and_exits_zero(
    ledger_queue, alice, spawn_worker, worker_env, tmp_path: Path
):
    decisions = decide(ledger_queue, alice, 5)
    markers = tmp_path / "markers"
    markers.mkdir()
    env = worker_env(LEDGER_SLEEP="2.5", LEDGER_MARKERS=str(markers))
    worker = spawn_worker("--batch-size", "10", *FAST, env=env)
    wait_until(lambda: list(markers.iterdir()), what="a decision in hand")

    worker.signal(signal.SIGTERM)

    assert worker.wait(timeout=30) == 0, worker.output()
    in_hand = {int(p.name.removeprefix("started-")) for p in markers.iterdir()}
    assert len(in_hand) == 1
    assert set(AppliedDecision.objects.values_list("decision_id", flat=True)) == in_hand
    assert ledger_counts() == dict.fromkeys(in_hand, 1)
    # It stopped claiming: the rest of its batch is still due, for the next worker.
    assert EffectJob.objects.filter(done_at__isnull=True, dead=False).count() == 4
    assert len(decisions) == 5


def test_a_second_signal_exits_at_once_leaving_the_decision_due(
    ledger_queue, alice, spawn_worker, worker_env, tmp_path: Path
):
    [decision] = decide(ledger_queue, alice, 1)
    markers = tmp_path / "markers"
    markers.mkdir()
    env = worker_env(LEDGER_SLEEP="120", LEDGER_MARKERS=str(markers))
    worker = spawn_worker(*FAST, env=env)
    wait_until(lambda: list(markers.iterdir()), what="a decision in hand")

    worker.signal(signal.SIGTERM)
    wait_until(lambda: "stop requested" in worker.output(), what="the first signal's log line")
    worker.signal(signal.SIGTERM)

    assert worker.wait(timeout=30) == 128 + signal.SIGTERM
    assert not AppliedDecision.objects.filter(decision=decision).exists()
    assert ledger_counts() == {}
    assert EffectJob.objects.get(decision=decision).done_at is None


def test_an_idle_worker_wakes_on_notify_long_before_its_poll(
    ledger_queue, alice, spawn_worker, worker_env
):
    worker = spawn_worker("--poll-interval", "60", "--escalate-every", "0")
    [first] = decide(ledger_queue, alice, 1, prefix="first")
    wait_until(lambda: _applied() == 1, what="the first decision")
    # The worker is now past LISTEN and idle, with its next poll 48..72 s away.
    [second] = decide(ledger_queue, alice, 1, prefix="second")

    wait_until(lambda: _applied() == 2, timeout=30, what="a NOTIFY to wake the worker")

    # Stopping does not wait out the long poll either.
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=15) == 0
    _assert_each_applied_exactly_once([first, second])


def test_it_sweeps_abandoned_items_on_its_cadence(queue, spawn_worker):
    worker = spawn_worker("--poll-interval", "0.1", "--escalate-every", "0.3")
    wait_until(lambda: "apply worker started" in worker.output(), what="worker start")
    [item] = make_items(queue, 1)
    # Leased as many times as the queue tolerates, and not under a live lease.
    ReviewItem.objects.filter(pk=item.pk).update(lease_count=queue.escalation_threshold)

    wait_until(
        lambda: ReviewItem.objects.get(pk=item.pk).queue_id == queue.escalation_queue_id,
        what="the sweep to move the abandoned item",
    )

    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0


def test_a_running_worker_keeps_its_start_up_objects_out_of_the_collectors_scans(spawn_worker):
    # reviewconsole/gc_tuning.py: frozen once everything is loaded, and a larger young
    # generation; the start line says what the collector runs on.
    worker = spawn_worker("--poll-interval", "0.1")
    wait_until(lambda: "apply worker started" in worker.output(), what="worker start")
    line = next(s for s in worker.output().splitlines() if "apply worker started" in s)
    started = json.loads(line)
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=15) == 0
    assert started["gc_gen0_threshold"] == 20_000
    assert started["gc_frozen_objects"] > 10_000


def test_its_connections_carry_statement_and_idle_transaction_timeouts():
    connection_created.connect(_configure_session)
    try:
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('statement_timeout'), "
                "current_setting('idle_in_transaction_session_timeout'), "
                "current_setting('application_name')"
            )
            assert cursor.fetchone() == ("30s", "1min", "review-console-apply-worker")
    finally:
        connection_created.disconnect(_configure_session)
        connection.close()


@pytest.mark.parametrize(
    "args",
    [
        ["--batch-size", "0"],
        ["--batch-size", "501"],
        ["--poll-interval", "0"],
        ["--max-attempts", "0"],
        ["--escalate-every", "-1"],
        ["--backoff-base", "0"],
    ],
)
def test_it_refuses_options_out_of_bounds(args):
    with pytest.raises(CommandError):
        call_command("run_apply_worker", "--once", *args)


def test_once_without_a_database_says_so_without_a_traceback(spawn_worker, worker_env, tmp_path):
    env = worker_env({"HOST": str(tmp_path), "USER": "postgres", "NAME": "nowhere"})
    worker = spawn_worker("--once", env=env)

    assert worker.wait() == 1
    output = worker.output()
    assert "Stopped on a database error; due decisions stay due" in output
    assert "Traceback" not in output
