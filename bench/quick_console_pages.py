"""Quick measurement of the console pages: render time p50/p95 and SQL queries per page.

Builds a throwaway database (test_console_bench) on the configured server, fills it with
10,000 pending items across two queues, and renders `/` and `/items/<id>/` (an item leased to
the reviewer, with its decision form) through Django's test client, so the figures include
middleware, session, auth, the views, templates and the SQL, but no network or browser.

    .venv/bin/python bench/quick_console_pages.py [--items 10000] [--runs 200]

A quick look, not the benchmark: the machine is shared, so read the figures as rough.
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
# A database of its own, so a test run on the same server is never disturbed.
os.environ["TEST_DATABASE_NAME"] = "test_console_bench"

import django

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from queue_app.models import Queue, ReasonCode, Verdict  # noqa: E402
from queue_app.services import claim_next  # noqa: E402

FILL = """
INSERT INTO queue_app_reviewitem
    (queue_id, state, priority, created_at, subject, payload, idempotency_key, source_hash,
     trace_id, lease_count)
SELECT %(queue_id)s, 'pending', (n %% 3) * 5, now() - make_interval(secs => n),
       'Statement line ' || n,
       jsonb_build_object(
           'ledger_entity', 'ENTITY-' || (n %% 40),
           'variance_amount', ((n %% 199999) - 99999) / 100.0,
           'match_decision', (ARRAY['MATCHED', 'PARTIAL', 'UNMATCHED'])[1 + n %% 3],
           'currency', 'EUR',
           'ledger_amount', (n * 137 %% 50000000) / 100.0,
           'bank_reference', 'BR' || (100000 + n),
           'counterparty', jsonb_build_object('name', 'Counterparty ' || n, 'country', 'NL')),
       %(prefix)s || n, 'bench', gen_random_uuid(), 0
  FROM generate_series(1, %(count)s) AS n
"""


def seed(items: int) -> tuple[User, Queue]:
    group = Group.objects.create(name="Reviewers")
    reviewer = User.objects.create_user("bench-reviewer", password="x")
    reviewer.groups.add(group)
    queues = []
    for slug in ("reconciliation", "kyc"):
        queue = Queue.objects.create(slug=slug, name=slug.title())
        queue.reviewer_groups.add(group)
        for verdict in (Verdict.APPROVE, Verdict.REJECT):
            for code in ("one", "two", "three"):
                ReasonCode.objects.create(queue=queue, verdict=verdict, code=code, label=code)
        queues.append(queue)
    with connection.cursor() as cursor:
        for queue in queues:
            cursor.execute(
                FILL, {"queue_id": queue.pk, "prefix": f"{queue.slug}-", "count": items // 2}
            )
        cursor.execute("ANALYZE queue_app_reviewitem")
    return reviewer, queues[0]


def measure(client: Client, path: str, runs: int) -> tuple[float, float, int, float]:
    for _ in range(5):
        assert client.get(path).status_code == 200
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(path)
        timings.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    sql_ms = []
    for _ in range(20):
        with CaptureQueriesContext(connection) as ctx:
            client.get(path)
        sql_ms.append(sum(float(q["time"]) for q in ctx.captured_queries) * 1000)
    q = statistics.quantiles(timings, n=100)
    return statistics.median(timings), q[94], len(ctx.captured_queries), statistics.median(sql_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000, help="pending items in total")
    parser.add_argument("--runs", type=int, default=200, help="renders per page")
    args = parser.parse_args()

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        reviewer, queue = seed(args.items)
        item = claim_next(queue=queue, reviewer=reviewer)
        client = Client()
        client.force_login(reviewer)
        print(f"{args.items:,} pending items, {args.runs} renders per page (test client)")
        print(f"{'page':<16}{'p50 ms':>9}{'p95 ms':>9}{'queries':>9}{'SQL ms p50':>12}")
        for label, path in (("/", "/"), ("/items/<id>/", f"/items/{item.pk}/")):
            p50, p95, queries, sql = measure(client, path, args.runs)
            print(f"{label:<16}{p50:>9.1f}{p95:>9.1f}{queries:>9}{sql:>12.1f}")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
