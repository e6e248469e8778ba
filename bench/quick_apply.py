"""Measure the apply worker: throughput by batch size, and commit-to-applied lag.

    .venv/bin/python bench/quick_apply.py 2>/dev/null

Runs in a scratch database (``bench_apply``) on the same server as the app: the embedded one
when DATABASE_URL is unset. It is dropped and recreated on each run, and dropped at the end.

1. Throughput: 3,000 decisions with the ``log`` effect (written in one bulk statement through
   the real decision table, triggers and outbox), drained by ``apply_batch`` in this process at
   batch sizes 1, 10 and 100; decisions per second = 3,000 / wall time of the drain. Logging
   stays at INFO (three lines per decision), as a real worker would run; send stderr elsewhere.
2. Lag: a real ``run_apply_worker`` process (batch 10, poll interval 1 s) while this process
   decides items through the real services at a steady 50 per second for 20 s; lag = the
   AppliedDecision's applied_at (clock_timestamp() inside the apply transaction) minus the
   moment submit_decision returned (its transaction committed). Once with NOTIFY, once with
   ``--no-notify`` (polling only).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))
BENCH_DB = "bench_apply"
THROUGHPUT_DECISIONS = 3000
BATCH_SIZES = (1, 10, 100)
RATE = 50
LAG_SECONDS = 20

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


def _server_url() -> tuple[dict[str, str], str]:
    """Return psycopg params for the server's maintenance database, and a URL template."""
    url = os.environ.get("DATABASE_URL")
    if url:
        import environ

        cfg = environ.Env.db_url_config(url)
        params = {"host": cfg["HOST"], "user": cfg["USER"], "password": cfg["PASSWORD"]}
        if cfg["PORT"]:
            params["port"] = str(cfg["PORT"])
        base = url.rsplit("/", 1)[0]
        return params, base + "/{db}"
    from reviewconsole.embedded_pg import ensure_embedded_database

    conn = ensure_embedded_database(PROJECT_DIR / "var")
    return {"host": conn["HOST"], "user": "postgres"}, "postgres://postgres@/{db}?host=" + conn[
        "HOST"
    ]


def _recreate(params: dict[str, str], *, drop_only: bool = False) -> None:
    import psycopg

    with psycopg.connect(**params, dbname="postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        if not drop_only:
            conn.execute(f"CREATE DATABASE {BENCH_DB}")


def main() -> None:
    params, url_template = _server_url()
    _recreate(params)
    bench_url = url_template.format(db=BENCH_DB)
    os.environ["DATABASE_URL"] = bench_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        queue, reviewer, reason_id = _setup()
        print(f"apply throughput, log effect, {THROUGHPUT_DECISIONS:,} decisions per run:")
        for batch_size in BATCH_SIZES:
            rate = _throughput(queue, reviewer, reason_id, batch_size)
            print(f"  batch size {batch_size:>3}: {rate:,.0f} decisions/s")
        print(f"commit-to-applied lag at {RATE}/s for {LAG_SECONDS} s (worker batch 10, poll 1 s):")
        for notify in (True, False):
            lags = _lag(queue, reviewer, bench_url, notify=notify)
            q = statistics.quantiles(lags, n=100)
            label = "NOTIFY " if notify else "polling"
            print(
                f"  {label}: p50 {q[49] * 1000:7.1f} ms  p99 {q[98] * 1000:7.1f} ms  "
                f"max {max(lags) * 1000:7.1f} ms  (n={len(lags)})"
            )
    finally:
        from django.db import connections

        connections.close_all()
        _recreate(params, drop_only=True)


def _setup():
    from django.contrib.auth.models import Group, User

    from queue_app.models import Queue, ReasonCode, Verdict

    group = Group.objects.create(name="bench")
    reviewer = User.objects.create_user("bench-reviewer")
    reviewer.groups.add(group)
    queue = Queue.objects.create(slug="bench", name="Bench", effect="log")
    queue.reviewer_groups.add(group)
    reason = ReasonCode.objects.create(queue=queue, verdict=Verdict.APPROVE, code="ok", label="OK")
    return queue, reviewer, reason.pk


def _throughput(queue, reviewer, reason_id: int, batch_size: int) -> float:
    from django.db import connection

    from queue_app.apply import apply_batch

    with connection.cursor() as cursor:
        cursor.execute(
            BULK_DECISIONS,
            {
                "queue_id": queue.pk,
                "prefix": f"tp{batch_size}-",
                "n": THROUGHPUT_DECISIONS,
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
    assert applied == THROUGHPUT_DECISIONS, applied
    return applied / elapsed


def _lag(queue, reviewer, url: str, *, notify: bool) -> list[float]:
    from django.db import connection

    from queue_app.evidence import evidence_hash
    from queue_app.models import AppliedDecision, ReviewItem
    from queue_app.services import claim_next, submit_decision

    n = RATE * LAG_SECONDS
    prefix = f"lag-{'notify' if notify else 'poll'}-"
    ReviewItem.objects.bulk_create(
        ReviewItem(
            queue=queue, subject=f"lag {i}", payload={"i": i}, idempotency_key=f"{prefix}{i}"
        )
        for i in range(n)
    )
    args = ["--batch-size", "10", "--poll-interval", "1", "--escalate-every", "0"]
    if not notify:
        args.append("--no-notify")
    env = {**os.environ, "DATABASE_URL": url}
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "run_apply_worker", *args],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_worker(connection)
        committed: dict[int, float] = {}
        start = time.time()
        for i in range(n):
            pause = start + i / RATE - time.time()
            if pause > 0:
                time.sleep(pause)
            item = claim_next(queue=queue, reviewer=reviewer)
            decision = submit_decision(
                item_id=item.pk,
                reviewer=reviewer,
                lease_token=item.lease_token,
                verdict="approve",
                reason_code="ok",
                evidence_hash=evidence_hash(subject=item.subject, payload=item.payload),
            )
            committed[decision.pk] = time.time()
        while AppliedDecision.objects.filter(decision_id__in=committed).count() < n:
            time.sleep(0.2)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    applied = AppliedDecision.objects.filter(decision_id__in=committed).values_list(
        "decision_id", "applied_at"
    )
    return [at.timestamp() - committed[decision_id] for decision_id, at in applied]


def _wait_for_worker(connection) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = 'review-console-apply-worker'"
            )
            if cursor.fetchone()[0]:
                time.sleep(0.5)
                return
        time.sleep(0.1)
    raise SystemExit("the worker did not connect within 60 s")


if __name__ == "__main__":
    main()
