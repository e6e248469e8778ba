"""B5: the apply worker: decisions applied per second, and decision-to-applied lag.

1. Throughput: N decisions with the `log` effect, bulk-written through the real decision
   table (its triggers and outbox), drained by `apply_batch` in this process at batch sizes
   1, 10 and 100; rate = N / wall time of the drain. Logging stays at INFO (the log effect's
   lines are formatted as in production) and goes to /dev/null.
2. Lag: a real `manage.py run_apply_worker` process (batch 10, poll interval 1 s) while
   producer threads here claim and decide items through the services at a steady 50 per
   second; lag = AppliedDecision.applied_at (clock_timestamp() inside the apply transaction)
   minus the moment submit_decision returned (its transaction had committed). Once with
   LISTEN/NOTIFY, once with `--no-notify` (poll only). The worker's peak RSS (VmHWM) is read
   from /proc just before it is stopped.

    .venv/bin/python bench/apply.py            # full run (about 2 minutes)
    .venv/bin/python bench/apply.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    ROOT,
    bench_database,
    drop_database,
    machine,
    peak_rss_mb,
    percentiles,
    process_peak_rss_mb,
    review_next,
    scratch_database,
    write_results,
)

DB = "rc_bench_apply"
BATCH_SIZES = (1, 10, 100)
RATE = 50
PRODUCERS = 4
LAG_TARGET_P99_MS = 250.0

# Items, their decisions and outbox rows in one statement: the decision insert fires the
# chain-hash and append-only triggers, the effect-job insert fires the NOTIFY trigger.
BULK_DECISIONS = """
WITH items AS (
    INSERT INTO queue_app_reviewitem
           (queue_id, state, priority, created_at, subject, payload, idempotency_key,
            source_hash, trace_id, lease_count, decided_at)
    SELECT %(queue_id)s, 'decided', 0, now(), 'bench ' || g, '{"amount": "12.50"}'::jsonb,
           %(prefix)s || g, '', gen_random_uuid(), 1, now()
      FROM generate_series(1, %(n)s) AS g
 RETURNING id, queue_id
), decisions AS (
    INSERT INTO queue_app_decision
           (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
            created_at, chain_hash)
    SELECT id, queue_id, %(reviewer_id)s, 'approve', %(reason_id)s, repeat('0', 64), '', now(), ''
      FROM items
 RETURNING id, queue_id
)
INSERT INTO queue_app_effectjob
       (decision_id, queue_id, created_at, attempts, next_attempt_at, last_error, dead)
SELECT id, queue_id, now(), 0, now(), '', false FROM decisions
"""


def setup() -> tuple[Any, list[Any], int]:
    """Create the bench queue (log effect), its reason code and PRODUCERS reviewers."""
    from django.contrib.auth.models import Group, User

    from queue_app.models import Queue, ReasonCode, Verdict

    group = Group.objects.create(name="Apply bench")
    queue = Queue.objects.create(slug="apply", name="Apply", effect="log")
    queue.reviewer_groups.add(group)
    reason = ReasonCode.objects.create(queue=queue, verdict=Verdict.APPROVE, code="ok", label="OK")
    reviewers = []
    for i in range(PRODUCERS):
        user = User.objects.create_user(f"apply-{i}")
        user.groups.add(group)
        reviewers.append(user)
    return queue, reviewers, reason.pk


def throughput(queue: Any, reviewer: Any, reason_id: int, *, batch_size: int, n: int) -> float:
    """Drain n bulk-written decisions with apply_batch(batch_size); return decisions/s."""
    from django.db import connection

    from queue_app.apply import apply_batch

    with connection.cursor() as cursor:
        cursor.execute(
            BULK_DECISIONS,
            {
                "queue_id": queue.pk,
                "prefix": f"tp{batch_size}-",
                "n": n,
                "reviewer_id": reviewer.pk,
                "reason_id": reason_id,
            },
        )
        cursor.execute("VACUUM ANALYZE queue_app_effectjob")
    applied = 0
    start = time.perf_counter()
    while done := apply_batch(batch_size=batch_size):
        applied += done
    elapsed = time.perf_counter() - start
    if applied != n:
        raise RuntimeError(f"applied {applied} of {n} decisions")
    return round(n / elapsed, 1)


def _produce(queue: Any, reviewer: Any, slots: list[float], committed: dict[int, float]) -> None:
    """Claim and decide one item at each of the given start times (a thread of its own)."""
    from django.db import connection

    try:
        for at in slots:
            pause = at - time.time()
            if pause > 0:
                time.sleep(pause)
            decision = review_next(queue, reviewer)
            if decision is None:
                raise RuntimeError("the lag run ran out of items")
            committed[decision.pk] = time.time()
    finally:
        connection.close()


def lag(queue: Any, reviewers: list[Any], *, seconds: float, notify: bool) -> dict[str, Any]:
    """Decide items at RATE/s while a real worker applies them; return lag figures."""
    from django.db import connection

    from queue_app.evidence import evidence_hash
    from queue_app.models import AppliedDecision, ReviewItem

    n = int(RATE * seconds)
    label = "notify" if notify else "poll"
    # Each with its stored evidence hash, as intake gives it: the decide compares with it.
    ReviewItem.objects.bulk_create(
        ReviewItem(
            queue=queue,
            subject=f"lag {i}",
            payload={"i": i},
            idempotency_key=f"{label}{i}",
            evidence_hash=evidence_hash(subject=f"lag {i}", payload={"i": i}),
        )
        for i in range(n)
    )
    args = ["--batch-size", "10", "--poll-interval", "1", "--escalate-every", "0"]
    if not notify:
        args.append("--no-notify")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "run_apply_worker", *args],
        cwd=ROOT,
        # INFO, as an operator runs it: the log lines are part of the worker's cost.
        env={**os.environ, "LOG_LEVEL": "INFO"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_worker(connection, notify=notify)
        committed: dict[int, float] = {}
        start = time.time() + 0.1
        # Producer k takes every PRODUCERS-th slot: 50/s overall even when one cycle is slow.
        slots = [start + i / RATE for i in range(n)]
        threads = [
            threading.Thread(
                target=_produce, args=(queue, reviewers[k], slots[k::PRODUCERS], committed)
            )
            for k in range(PRODUCERS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        produced_s = max(committed.values()) - start
        if len(committed) != n:
            raise RuntimeError(f"decided {len(committed)} of {n} items")
        deadline = time.monotonic() + 120
        while AppliedDecision.objects.filter(decision_id__in=committed).count() < n:
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the worker stopped applying decisions")
            time.sleep(0.2)
        worker_rss = process_peak_rss_mb(worker.pid)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    applied = AppliedDecision.objects.filter(decision_id__in=committed).values_list(
        "decision_id", "applied_at"
    )
    lags = [(at.timestamp() - committed[pk]) * 1000 for pk, at in applied]
    return {
        "lag_ms": {**percentiles(lags), "max": round(max(lags), 1)},
        "achieved_rate": round(n / produced_s, 1),
        "worker_peak_rss_mb": worker_rss,
    }


def wait_for_worker(connection: Any, *, notify: bool) -> None:
    """Return once the worker is connected and, with NOTIFY, listening."""
    # The listener has an application_name of its own; poll-only has just the worker's session.
    name = "review-console-apply-listen" if notify else "review-console-apply-worker"
    deadline = time.monotonic() + 180  # Django's start-up alone is slow on a loaded machine.
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = %s",
                [name],
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.1)
    raise RuntimeError("the worker did not connect within 180 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    per_batch, lag_seconds = (30, 0.5) if args.smoke else (3_000, 20.0)

    os.environ["LOG_LEVEL"] = "INFO"
    db = bench_database(DB, smoke=args.smoke)
    scratch_database(db)
    devnull = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(devnull)
    try:
        queue, reviewers, reason_id = setup()
        results: dict[str, Any] = {
            "machine": machine(),
            "smoke": args.smoke,
            "decisions_per_batch_size": per_batch,
            "rate": RATE,
            "lag_seconds": lag_seconds,
            "throughput_per_second": {},
        }
        for batch_size in BATCH_SIZES:
            rate = throughput(queue, reviewers[0], reason_id, batch_size=batch_size, n=per_batch)
            results["throughput_per_second"][str(batch_size)] = rate
            print(f"B5 batch {batch_size:>3}: {rate:,.0f} decisions/s", flush=True)
        for notify in (True, False):
            label = "notify" if notify else "poll"
            results[label] = lag(queue, reviewers, seconds=lag_seconds, notify=notify)
            figures = results[label]
            print(
                f"B5 lag {label:>6} at {figures['achieved_rate']}/s: "
                f"p50 {figures['lag_ms']['p50']:.1f} ms  p99 {figures['lag_ms']['p99']:.1f} ms  "
                f"worker peak {figures['worker_peak_rss_mb']} MiB",
                flush=True,
            )
        results["peak_rss_mb"] = peak_rss_mb()
        results["summary"] = {
            "applied_per_second": results["throughput_per_second"],
            "lag_p50_ms": {k: results[k]["lag_ms"]["p50"] for k in ("notify", "poll")},
            "lag_p99_ms": {k: results[k]["lag_ms"]["p99"] for k in ("notify", "poll")},
            "lag_target_p99_ms": LAG_TARGET_P99_MS,
            "lag_target_met": results["notify"]["lag_ms"]["p99"] < LAG_TARGET_P99_MS,
            "worker_peak_rss_mb": max(results[k]["worker_peak_rss_mb"] for k in ("notify", "poll")),
            "bench_process_peak_rss_mb": results["peak_rss_mb"],
        }
    finally:
        drop_database(db)
    print("wrote", write_results("apply-smoke" if args.smoke else "apply", results))


if __name__ == "__main__":
    main()
