"""B1 and B2: claim latency against live leases and against decided history.

B1: 300,000 pending items with 0, 1,000, 10,000 and 100,000 live leases at the head of the
queue. claim_next through the service layer, its claim statement (CLAIM_NEXT_ITEM, sent
alone and planned each time), and the reference single-state query of the first design (one
'pending' state, an expiry filter) on a table of the reference shape holding the same rows.
B2: 300,000 pending with 0, 1,000,000 and 5,000,000 decided items in the same table.

Each claim runs in a transaction that is rolled back, so every sample sees the same data.

    .venv/bin/python bench/claims.py            # full run (several minutes)
    .venv/bin/python bench/claims.py --smoke    # tiny sizes, seconds (run by the test suite)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    bench_database,
    machine,
    peak_rss_mb,
    percentiles,
    scratch_database,
    time_calls,
    write_results,
)

REFERENCE_TABLE = """
CREATE TABLE IF NOT EXISTS bench_reference_item (
    id bigint PRIMARY KEY,
    queue text NOT NULL,
    state text NOT NULL,
    priority int NOT NULL,
    created_at timestamptz NOT NULL,
    payload jsonb NOT NULL,
    lease_owner bigint,
    lease_token uuid,
    lease_expires timestamptz,
    lease_count int NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS bench_reference_claimable
    ON bench_reference_item (queue, priority DESC, created_at) WHERE state = 'pending';
"""

# The reference write-up's claim, verbatim in shape: one 'pending' state and an expiry filter,
# so every claim walks past every live lease at the head of the queue.
REFERENCE_CLAIM = """
UPDATE bench_reference_item
   SET lease_owner = %(owner)s, lease_token = gen_random_uuid(),
       lease_expires = now() + interval '10 minutes', lease_count = lease_count + 1
 WHERE id = (
        SELECT id FROM bench_reference_item
         WHERE queue = 'bench' AND state = 'pending'
           AND (lease_expires IS NULL OR lease_expires < now())
         ORDER BY priority DESC, created_at
           FOR UPDATE SKIP LOCKED
         LIMIT 1)
RETURNING id, lease_token, payload
"""


def load(queue_id: int, total: int) -> None:
    """Bulk-load `total` items into both tables (state set per level later)."""
    from django.db import connection

    with connection.cursor() as c:
        c.execute(REFERENCE_TABLE)
        c.execute(
            """
            INSERT INTO queue_app_reviewitem
                (id, queue_id, state, priority, created_at, subject, payload, idempotency_key,
                 source_hash, trace_id, lease_count, decided_at, due_at)
            SELECT g, %s, 'decided', 0, now() - make_interval(secs => (%s - g) / 1000.0),
                   'bench item ' || g, '{"amount": 12.50, "ref": "abc"}', 'bench-' || g, '',
                   gen_random_uuid(), 0, now(),
                   -- The claim's order (priority, deadline, age): two items in three carry a
                   -- deadline, scattered over a week, so the claim's index walk meets both.
                   CASE WHEN g %% 3 = 0 THEN NULL
                        ELSE now() + make_interval(secs => (g::bigint * 7919) %% 604800) END
              FROM generate_series(1, %s) AS g
            """,
            [queue_id, total, total],
        )
        c.execute(
            """
            INSERT INTO bench_reference_item (id, queue, state, priority, created_at, payload)
            SELECT id, 'bench', 'decided', priority, created_at, payload FROM queue_app_reviewitem
            """
        )
        c.execute("SELECT setval('queue_app_reviewitem_id_seq', %s)", [total])


def set_level(*, holder_id: int, leased: int, pending: int, offset: int = 0) -> None:
    """Make rows offset+1..offset+leased live leases and the next `pending` rows pending."""
    from django.db import connection

    lo, mid, hi = offset, offset + leased, offset + leased + pending
    with connection.cursor() as c:
        c.execute(
            """
            UPDATE queue_app_reviewitem SET
              state = CASE WHEN id > %(lo)s AND id <= %(mid)s THEN 'leased'
                           WHEN id > %(mid)s AND id <= %(hi)s THEN 'pending' ELSE 'decided' END,
              lease_owner_id = CASE WHEN id > %(lo)s AND id <= %(mid)s THEN %(holder)s END,
              lease_token = CASE WHEN id > %(lo)s AND id <= %(mid)s THEN gen_random_uuid() END,
              lease_expires = CASE WHEN id > %(lo)s AND id <= %(mid)s
                                   THEN now() + interval '1 day' END,
              lease_count = CASE WHEN id > %(lo)s AND id <= %(mid)s THEN 1 ELSE 0 END,
              decided_at = CASE WHEN id > %(lo)s AND id <= %(hi)s THEN NULL ELSE now() END
            WHERE state <> CASE WHEN id > %(lo)s AND id <= %(mid)s THEN 'leased'
                           WHEN id > %(mid)s AND id <= %(hi)s THEN 'pending' ELSE 'decided' END
               OR (id > %(lo)s AND id <= %(hi)s)
            """,
            {"lo": lo, "mid": mid, "hi": hi, "holder": holder_id},
        )
        # The reference table has no 'leased' state: a live lease is a pending row with a
        # future expiry, exactly as in the write-up.
        c.execute(
            """
            UPDATE bench_reference_item SET
              state = CASE WHEN id > %(lo)s AND id <= %(hi)s THEN 'pending' ELSE 'decided' END,
              lease_owner = CASE WHEN id > %(lo)s AND id <= %(mid)s THEN %(holder)s END,
              lease_token = CASE WHEN id > %(lo)s AND id <= %(mid)s THEN gen_random_uuid() END,
              lease_expires = CASE WHEN id > %(lo)s AND id <= %(mid)s
                                   THEN now() + interval '1 day' END
            """,
            {"lo": lo, "mid": mid, "hi": hi, "holder": holder_id},
        )
    vacuum()


def vacuum() -> None:
    from django.db import connection

    with connection.cursor() as c:
        c.execute("VACUUM ANALYZE queue_app_reviewitem")
        c.execute("VACUUM ANALYZE bench_reference_item")
        # Flush the bulk load's dirty pages now: a checkpoint running during the samples
        # (4,000,000 rows written just before B2's top level) slows every round trip.
        c.execute("CHECKPOINT")


def measure(queue, reviewer, n: int) -> dict[str, dict[str, float]]:
    """Time claim_next (service), CLAIM_NEXT_ITEM (its claim statement) and the reference."""
    from datetime import timedelta

    from django.db import connection, transaction

    from queue_app.db.statements import leases as leases_sql
    from queue_app.services import claim_next

    def service() -> None:
        with transaction.atomic():
            assert claim_next(queue=queue, reviewer=reviewer) is not None
            transaction.set_rollback(True)

    params = {
        "queue_id": queue.pk,
        "owner_id": reviewer.pk,
        "ttl": timedelta(minutes=10),
        "max_leases": 2**31 - 1,
        "release_skip": timedelta(minutes=15),
    }

    def statement() -> None:
        with transaction.atomic(), connection.cursor() as c:
            c.execute(leases_sql.CLAIM_NEXT_ITEM, params)
            assert c.fetchone() is not None
            transaction.set_rollback(True)

    def reference() -> None:
        with transaction.atomic(), connection.cursor() as c:
            c.execute(REFERENCE_CLAIM, {"owner": reviewer.pk})
            assert c.fetchone() is not None
            transaction.set_rollback(True)

    # Interleave the three so drift on a noisy machine hits them alike.
    out: dict[str, list[float]] = {"service": [], "statement": [], "reference": []}
    rounds = 5
    for _ in range(rounds):
        out["service"] += time_calls(service, n // rounds, warmup=5)
        out["statement"] += time_calls(statement, n // rounds, warmup=5)
        out["reference"] += time_calls(reference, n // rounds, warmup=5)
    return {name: percentiles(samples) for name, samples in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for CI")
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--only", choices=["b1", "b2"], default=None)
    args = parser.parse_args()

    if args.smoke:
        pending, lease_levels, history_levels, samples = 2_000, [0, 100, 1_000], [0, 5_000], 50
    else:
        pending = 300_000
        lease_levels = [0, 1_000, 10_000, 50_000, 100_000]
        history_levels = [0, 1_000_000, 5_000_000]
        samples = 1_000
    samples = args.samples or samples

    scratch_database(bench_database("rc_bench_claims", smoke=args.smoke))
    from django.contrib.auth.models import User

    from queue_app.models import Queue

    queue = Queue.objects.create(slug="bench", name="Bench")
    reviewer = User.objects.create_superuser("bench-reviewer", password=None)
    holder = User.objects.create_user("bench-holder")
    results: dict = {"machine": machine(), "smoke": args.smoke, "samples": samples}

    if args.only in (None, "b1"):
        load(queue.pk, pending + max(lease_levels))
        b1 = {}
        for leased in lease_levels:
            set_level(holder_id=holder.pk, leased=leased, pending=pending)
            b1[str(leased)] = measure(queue, reviewer, samples)
            print(
                f"B1 live leases={leased:>7}: "
                + "  ".join(
                    f"{k} p50={v['p50']:.3f}ms p99={v['p99']:.3f}ms"
                    for k, v in b1[str(leased)].items()
                ),
                flush=True,
            )
        base = b1[str(lease_levels[0])]
        top = b1[str(lease_levels[-1])]
        results["b1"] = {
            "pending": pending,
            "levels": b1,
            "ratio_p50_max_vs_none": {k: round(top[k]["p50"] / base[k]["p50"], 2) for k in base},
            "service_vs_reference_p50_at_max": round(
                top["service"]["p50"] / top["reference"]["p50"], 3
            ),
        }
        print("B1 p50 ratio at max leases vs none:", results["b1"]["ratio_p50_max_vs_none"])

    if args.only in (None, "b2"):
        from django.db import connection

        if args.only == "b2":
            load(queue.pk, pending)
        set_level(holder_id=holder.pk, leased=0, pending=pending)
        b2 = {}
        loaded = 0
        for history in history_levels:
            if history > loaded:
                with connection.cursor() as c:
                    # Decided history sits before the pending rows (older ids), as in life.
                    c.execute("SELECT coalesce(max(id), 0) FROM queue_app_reviewitem")
                    top_id = c.fetchone()[0]
                    c.execute(
                        """
                        INSERT INTO queue_app_reviewitem
                            (id, queue_id, state, priority, created_at, subject, payload,
                             idempotency_key, source_hash, trace_id, lease_count, decided_at)
                        SELECT %s + g, %s, 'decided', 0, now() - interval '30 days',
                               'history ' || g, '{"amount": 1.00}', 'hist-' || (%s + g), '',
                               gen_random_uuid(), 1, now() - interval '29 days'
                          FROM generate_series(1, %s) AS g
                        """,
                        [top_id, queue.pk, top_id, history - loaded],
                    )
                    c.execute(
                        "INSERT INTO bench_reference_item (id, queue, state, priority, "
                        "created_at, payload) SELECT id, 'bench', state, priority, "
                        "created_at, payload FROM queue_app_reviewitem "
                        "WHERE id > (SELECT coalesce(max(id), 0) FROM bench_reference_item)"
                    )
                loaded = history
            vacuum()
            b2[str(history)] = measure(queue, reviewer, samples)
            print(
                f"B2 decided={history:>9}: "
                + "  ".join(
                    f"{k} p50={v['p50']:.3f}ms p99={v['p99']:.3f}ms"
                    for k, v in b2[str(history)].items()
                ),
                flush=True,
            )
        base = b2[str(history_levels[0])]
        top = b2[str(history_levels[-1])]
        results["b2"] = {
            "pending": pending,
            "levels": b2,
            "ratio_p50_max_vs_none": {k: round(top[k]["p50"] / base[k]["p50"], 2) for k in base},
        }
        print("B2 p50 ratio at max history vs none:", results["b2"]["ratio_p50_max_vs_none"])

    results["peak_rss_mb"] = peak_rss_mb()
    path = write_results("claims-smoke" if args.smoke else "claims", results)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
