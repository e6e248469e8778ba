"""What the claim's access gate costs the server: CLAIM_NEXT_ITEM against two variants of it.

One process, one connection, statements prepared from their first run; every claim is committed
and its item closed (a plain UPDATE, the same for every variant), so the queue moves on as in
use and no dead rows pile up at its head. The variants alternate in rounds; each round reads the
server backend's CPU (user + system, /proc) around its claims, and the ratios pair the variants
within a round.

- `current`: CLAIM_NEXT_ITEM as in leases_sql: the gate (no live lease of mine, and may I
  review this queue) in a MATERIALIZED CTE, evaluated once per claim;
- `gate per set`: the same gate written into each candidate set's WHERE (expired, resumed,
  fresh, skipped), as before 1a5ec88: evaluated once per set that runs;
- `no access probes`: the gate without _MAY_REVIEW (auth_user, group and API client probes):
  what those probes cost, measured on their own.

    .venv/bin/python bench/claim_variants.py            # ~2 min
    .venv/bin/python bench/claim_variants.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    drop_database,
    machine,
    paired_ratio,
    process_cpu_seconds,
    stocked_queue,
    write_results,
)

DB = "rc_bench_claim_variants"
CLOSE = """
UPDATE queue_app_reviewitem
   SET state = 'decided', decided_at = now(),
       lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL
 WHERE id = %(id)s
"""
NO_LIVE_LEASE = """NOT EXISTS (
    SELECT 1 FROM queue_app_reviewitem
     WHERE queue_id = %(queue_id)s AND state = 'leased'
       AND lease_owner_id = %(owner_id)s AND lease_expires > now())"""


def variants() -> dict[str, str]:
    """The statements compared, built from the db statements so that they cannot drift from it."""
    from queue_app.db.statements import access as access_sql
    from queue_app.db.statements import leases as leases_sql

    per_set = leases_sql._CLAIM.replace(
        "WITH gate AS MATERIALIZED (\n    SELECT {gate} AS allowed\n), expired", "WITH expired"
    ).replace("AND (SELECT allowed FROM gate)", "AND {gate}")
    if "gate" in per_set.replace("{gate}", ""):
        raise RuntimeError("leases_sql._CLAIM no longer has the gate CTE this script rewrites")
    access = access_sql._MAY_REVIEW.format(queue="%(queue_id)s")
    return {
        "current": leases_sql.CLAIM_NEXT_ITEM,
        "gate per set": per_set.format(
            limit="1", gate=f"{NO_LIVE_LEASE}\n AND {access}", returning="*"
        ),
        "no access probes": leases_sql._CLAIM.format(limit="1", gate=NO_LIVE_LEASE, returning="*"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    rounds, claims, stock = (2, 20, 200) if args.smoke else (7, 400, 60_000)

    db, queue, _reason, users = stocked_queue(
        DB, smoke=args.smoke, slug="variants", reviewers=1, stock=stock
    )
    about = machine()

    import psycopg

    statements = variants()
    params = {
        "queue_id": queue.pk,
        "owner_id": users[0],
        "ttl": timedelta(minutes=10),
        "max_leases": 2**31 - 1,
        "release_skip": timedelta(minutes=15),
    }
    spent: dict[str, list[float]] = {name: [] for name in statements}
    try:
        with psycopg.connect(os.environ["DATABASE_URL"], prepare_threshold=0) as conn:
            conn.autocommit = True
            pid = conn.info.backend_pid
            for _ in range(rounds):
                for name, statement in statements.items():
                    before = process_cpu_seconds(pid)
                    for _ in range(claims):
                        with conn.transaction():
                            (row,) = conn.execute(statement, params).fetchall()
                        conn.execute(CLOSE, {"id": row[0]})
                    cpu_ms = (process_cpu_seconds(pid) - before) * 1000 / claims
                    spent[name].append(cpu_ms)
            print(f"   server CPU ms per claim + close, by round: {spent}", flush=True)
    finally:
        drop_database(db)

    results = {
        "machine": about,
        "smoke": args.smoke,
        "rounds": rounds,
        "claims_per_round": claims,
        "pending": stock,
        "server_cpu_ms": {name: round(statistics.median(v), 3) for name, v in spent.items()},
        # Each variant against current in the same round (a median of paired ratios).
        "ratio_to_current": {name: paired_ratio(v, spent["current"]) for name, v in spent.items()},
    }
    print(f"claim variants: {results['server_cpu_ms']}, to current {results['ratio_to_current']}")
    name = "claim_variants-smoke" if args.smoke else "claim_variants"
    print("wrote", write_results(name, results))


if __name__ == "__main__":
    main()
