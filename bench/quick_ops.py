"""Measure /metrics and /ops/ at 1,000,000 decided items and 50,000 pending. Run once, by hand.

    .venv/bin/python bench/quick_ops.py [--decided 1000000] [--pending 50000] [--keep]

Creates a scratch database next to the app's (on the embedded server, or on DATABASE_URL's
server), migrates it, bulk-loads with INSERT ... SELECT generate_series, then times each page
through Django's test client (median of 5 after a warm-up) and counts its queries. It then
EXPLAINs every figure statement, adds the two proposed indexes (PROPOSED_INDEXES) and
measures again. The scratch database is dropped at the end unless --keep.

The bulk load runs with session_replication_role = replica (no triggers: no per-row chain
hash, no foreign-key checks) because it would otherwise take most of an hour on this machine;
the rows it writes satisfy every constraint, and the measured statements never read the chain.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
# Loopback, plain http: without DEBUG the settings would redirect every request to https.
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
# Production settings (DEBUG off) refuse to start without a key: a throwaway one for the bench.
os.environ.setdefault("SECRET_KEY", "bench-only-key-not-a-secret-0123456789-abcdefghijklmnop")

import warnings

import django

# WhiteNoise warns when collectstatic has not run; the bench serves no static files.
warnings.filterwarnings("ignore", message="No directory at")

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from queue_app.db.statements import ops as ops_sql  # noqa: E402
from queue_app.models import ApiClient, Queue, ReasonCode  # noqa: E402
from queue_app.ops.doctor_checks import run_checks  # noqa: E402
from queue_app.selectors.queue_figures import TOP_LEASE_BUCKET, WINDOW_HOURS, unapplied_alert_after  # noqa: E402

BENCH_DB = "reviewconsole_bench_ops"

LOAD_DECIDED = """
INSERT INTO queue_app_reviewitem
       (queue_id, state, priority, created_at, subject, payload, idempotency_key, source_hash,
        trace_id, lease_count, decided_at)
SELECT CASE WHEN g %% 3 = 0 THEN %(recon)s ELSE %(kyc)s END, 'decided', 0,
       t.decided - interval '1 hour', 'bench decided ' || g, '{"n": 1}'::jsonb,
       'bench-d-' || g, '', gen_random_uuid(), 1 + (g %% 7 = 0)::int + (g %% 29 = 0)::int, t.decided
  FROM generate_series(1, %(n)s) AS g
 CROSS JOIN LATERAL (
        -- Spread over 30 days, oldest first, so ids grow with time as they do in production.
        SELECT now() - make_interval(secs => (%(n)s - g)::float8 / %(n)s * 30 * 86400 + 5)
               AS decided
       ) AS t
"""

LOAD_DECISIONS = """
WITH codes AS (
    SELECT queue_id, verdict, array_agg(id ORDER BY id) AS ids
      FROM queue_app_reasoncode GROUP BY queue_id, verdict
), items AS (
    SELECT i.id, i.queue_id, i.decided_at,
           CASE WHEN i.id %% 10 < 6 THEN 'approve' WHEN i.id %% 10 < 9 THEN 'reject'
                ELSE 'escalate' END AS verdict
      FROM queue_app_reviewitem AS i
     WHERE i.state = 'decided'
)
INSERT INTO queue_app_decision
       (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
        lease_token, created_at, chain_hash)
SELECT items.id, items.queue_id, (%(reviewers)s)[1 + items.id %% 3], items.verdict,
       codes.ids[1 + (items.id / 10) %% array_length(codes.ids, 1)],
       md5(items.id::text) || md5(items.verdict), '', gen_random_uuid(), items.decided_at, ''
  FROM items
  JOIN codes ON codes.queue_id = items.queue_id AND codes.verdict = items.verdict
 ORDER BY items.id
"""

# Handling time: 20 s .. 15 min, with one decision in a hundred taking 20 minutes longer.
LOAD_EVENTS = """
INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
SELECT d.item_id, e.kind, d.reviewer_id, e.at, '{}'::jsonb
  FROM queue_app_decision AS d
 CROSS JOIN LATERAL (VALUES
        ('claimed', d.created_at - make_interval(
             secs => 20 + (d.id * 7919) %% 880 + CASE WHEN d.id %% 100 = 0 THEN 1200 ELSE 0 END)),
        ('decided', d.created_at)
       ) AS e(kind, at)
"""

# Every decision applied but the newest %(unapplied)s; %(dead)s of those gave up.
LOAD_OUTBOX = """
WITH newest AS (SELECT id FROM queue_app_decision ORDER BY id DESC LIMIT %(unapplied)s),
     dead AS (SELECT id FROM newest ORDER BY id LIMIT %(dead)s)
INSERT INTO queue_app_effectjob
       (decision_id, queue_id, created_at, attempts, next_attempt_at, last_error, dead, done_at)
SELECT d.id, d.queue_id, d.created_at, 1, d.created_at,
       CASE WHEN d.id IN (SELECT id FROM dead) THEN 'bench: receiver answered 503' ELSE '' END,
       d.id IN (SELECT id FROM dead),
       CASE WHEN d.id IN (SELECT id FROM newest) THEN NULL
            ELSE d.created_at + interval '2 seconds' END
  FROM queue_app_decision AS d
"""

LOAD_APPLIED = """
INSERT INTO queue_app_applieddecision (decision_id, applied_at, outcome)
SELECT decision_id, done_at, '{}'::jsonb FROM queue_app_effectjob WHERE done_at IS NOT NULL
"""

LOAD_PENDING = """
INSERT INTO queue_app_reviewitem
       (queue_id, state, priority, created_at, subject, payload, idempotency_key, source_hash,
        trace_id, lease_count)
SELECT CASE WHEN g %% 3 = 0 THEN %(recon)s ELSE %(kyc)s END, 'pending', (g %% 5 = 0)::int * 5,
       now() - make_interval(secs => g * 2), 'bench pending ' || g, '{"n": 1}'::jsonb,
       'bench-p-' || g, '', gen_random_uuid(), (g %% 4 = 0)::int + (g %% 17 = 0)::int
  FROM generate_series(1, %(n)s) AS g
"""

# Leases held by an automated worker (an API client's user: batches are its normal way).
LOAD_LEASED = """
INSERT INTO queue_app_reviewitem
       (queue_id, state, priority, created_at, subject, payload, idempotency_key, source_hash,
        trace_id, lease_count, lease_owner_id, lease_token, lease_expires)
SELECT %(kyc)s, 'leased', 0, now() - interval '30 minutes', 'bench leased ' || g,
       '{"n": 1}'::jsonb, 'bench-l-' || g, '', gen_random_uuid(), 1, %(worker)s,
       gen_random_uuid(), now() + CASE WHEN g %% 4 = 0 THEN interval '-5 minutes'
                                       ELSE interval '10 minutes' END
  FROM generate_series(1, %(n)s) AS g
"""


# What the lead is asked to add (README, Operations): a BRIN index suits an append-only log
# whose created_at grows with its physical order (a few pages, not 1M entries); dead jobs are
# few, so their partial index is tiny.
PROPOSED_INDEXES = [
    "CREATE INDEX decision_created_brin ON queue_app_decision USING brin (created_at)",
    "CREATE INDEX effectjob_dead ON queue_app_effectjob (queue_id) WHERE dead AND done_at IS NULL",
]


def say(message: str) -> None:
    print(message, flush=True)


def switch_to(database: str) -> None:
    connection.close()
    connection.settings_dict["NAME"] = database


def create_scratch_database(original: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}"')
        cursor.execute(f'CREATE DATABASE "{BENCH_DB}"')
    switch_to(BENCH_DB)


def load(decided: int, pending: int) -> None:
    call_command("migrate", verbosity=0)
    escalation = Queue.objects.create(slug="escalation", name="Escalations")
    kyc = Queue.objects.create(slug="kyc", name="KYC checks", escalation_queue=escalation)
    recon = Queue.objects.create(
        slug="reconciliation", name="Reconciliation", escalation_queue=escalation
    )
    for queue in (escalation, kyc, recon):
        for verdict, codes in {
            "approve": ["verified", "low_risk"],
            "reject": ["document_expired", "face_mismatch", "tampered", "sanctions"],
            "escalate": ["policy_gap"],
            "overturn": ["reviewer_error"],
        }.items():
            for code in codes:
                ReasonCode.objects.create(queue=queue, verdict=verdict, code=code, label=code)
    reviewers = [User.objects.create_user(username=f"reviewer{n}") for n in range(3)]
    worker = User.objects.create_user(username="bench-worker")
    ApiClient.objects.create(
        name="bench", user=worker, token_prefix="bench", token_hash="0" * 64, can_adjudicate=True
    )
    User.objects.create_user(username="ops", is_staff=True)
    params = {"kyc": kyc.pk, "recon": recon.pk, "worker": worker.pk}
    steps = [
        ("decided items", LOAD_DECIDED, {**params, "n": decided}),
        ("decisions", LOAD_DECISIONS, {"reviewers": [u.pk for u in reviewers]}),
        ("item events", LOAD_EVENTS, {}),
        ("effect jobs", LOAD_OUTBOX, {"unapplied": 200, "dead": 20}),
        ("applied decisions", LOAD_APPLIED, {}),
        ("pending items", LOAD_PENDING, {**params, "n": pending}),
        ("leased items", LOAD_LEASED, {**params, "n": 2000}),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        for name, statement, step_params in steps:
            started = time.perf_counter()
            cursor.execute(statement, step_params)
            say(f"  loaded {cursor.rowcount:>9,} {name} in {time.perf_counter() - started:.1f} s")
        cursor.execute("SET session_replication_role = origin")
        started = time.perf_counter()
        cursor.execute("VACUUM ANALYZE")
        say(f"  VACUUM ANALYZE in {time.perf_counter() - started:.1f} s")


def measure(client: Client, url: str, runs: int = 5) -> tuple[float, int]:
    """Return (median milliseconds, query count) of GET url."""
    assert client.get(url).status_code == 200  # warm-up: connection, templates, plan caches
    queries: list[str] = []

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get(url)
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    return statistics.median(timings), len(queries)


def explain_all() -> None:
    statements = {
        "OPEN_WORK": (ops_sql.OPEN_WORK, {"top_bucket": TOP_LEASE_BUCKET}),
        "DECISIONS_PER_HOUR": (ops_sql.DECISIONS_PER_HOUR, {"hours": WINDOW_HOURS}),
        "TIME_TO_DECISION": (ops_sql.TIME_TO_DECISION, {"hours": WINDOW_HOURS}),
        "REASON_SHARES": (ops_sql.REASON_SHARES, {"hours": WINDOW_HOURS}),
        "APPLY_STATE": (ops_sql.APPLY_STATE, {"overdue_after": unapplied_alert_after()}),
        "DEAD_JOBS": (ops_sql.DEAD_JOBS, {"limit": 50}),
    }
    with connection.cursor() as cursor:
        for name, (statement, params) in statements.items():
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) " + statement, params)
            plan = [row[0] for row in cursor.fetchall()]
            seq = sorted(
                {line.split("Seq Scan on ")[1].split()[0] for line in plan if "Seq Scan on" in line}
            )
            total = plan[-1].strip()
            say(f"  {name:<20} {total:<32} seq scans: {', '.join(seq) or 'none'}")
            if os.environ.get("BENCH_SHOW_PLANS"):
                say("\n".join("      " + line for line in plan))


def report(label: str) -> None:
    client = Client()
    client.force_login(User.objects.get(username="ops"))
    say(f"\n{label}")
    for url in ("/metrics", "/ops/"):
        ms, count = measure(client, url)
        say(f"  GET {url:<9} median {ms:7.1f} ms over 5 runs, {count} queries")
    started = time.perf_counter()
    checks = run_checks()
    failed = [c.name for c in checks if not c.ok]
    say(
        f"  doctor    {(time.perf_counter() - started) * 1000:7.1f} ms (failed: {failed or 'none'})"
    )
    explain_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decided", type=int, default=1_000_000)
    parser.add_argument("--pending", type=int, default=50_000)
    parser.add_argument("--keep", action="store_true", help="Keep the scratch database.")
    args = parser.parse_args()
    original = settings.DATABASES["default"]["NAME"]
    say(f"Scratch database {BENCH_DB}: {args.decided:,} decided items, {args.pending:,} pending")
    create_scratch_database(original)
    try:
        load(args.decided, args.pending)
        report("Schema as merged")
        with connection.cursor() as cursor:
            started = time.perf_counter()
            for statement in PROPOSED_INDEXES:
                cursor.execute(statement)
            cursor.execute("ANALYZE queue_app_decision, queue_app_effectjob")
            built = time.perf_counter() - started
        say(f"\n  (proposed indexes built in {built:.1f} s: {'; '.join(PROPOSED_INDEXES)})")
        report("With the two proposed indexes")
    finally:
        switch_to(original)
        if not args.keep:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')
            say(f"\nDropped {BENCH_DB}.")


if __name__ == "__main__":
    main()
