"""B3: claim + decide cycles per second, services vs pgbench on the same statements.

The Python side runs claim_next and submit_decision through the service layer in 1, 8 and 32
processes, counting cycles for a fixed time once every process is set up. The baseline is
pgbench running, at the same client counts, the statements the services run — read from
queue_app/db/statements at run time, so the two cannot drift — prepared, as the services' are, and
grouped into the same round trips (pipelines).

A third side, the floor, sends the same statements in the services' round trips from Python
through psycopg alone: no Django, no services, no hashing, nothing decided between them. What
it reaches of pgbench is what any Python client reaches here; what the services reach of it
is what Django and the application cost on top.

    .venv/bin/python bench/cycle.py            # full run
    .venv/bin/python bench/cycle.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    machine,
    peak_rss_mb,
    review_next,
    reviewer_process,
    run_pgbench,
    start_together,
    stocked_queue,
    write_results,
)

DB = "rc_bench_cycle"
# A QA draw (lanes.qa_draw: the services compute one per approve), for pgbench and the floor.
QA_DRAW = "12345678901234567890"
# The cycle's fixed parameters, for pgbench (as SQL literals) and the floor (as values) alike.
LOCK_TIMEOUT, STATEMENT_TIMEOUT = "2000ms", "5000ms"
TTL_SECONDS, RELEASE_SKIP_SECONDS, MAX_LEASES = 600, 900, 2147483647


def pgbench_script(*, queue_id: int, reason_code: str, first_user: int, users: int) -> str:
    """Translate the service layer's statements into one pgbench transaction."""
    from queue_app.db.statements import access as access_sql
    from queue_app.db.statements import decisions as decisions_sql
    from queue_app.db.statements import leases as leases_sql
    from queue_app.db.statements import outbox as outbox_sql

    def bind(statement: str, values: dict[str, str]) -> str:
        text = re.sub(r"%\((\w+)\)s", lambda m: values[m.group(1)], statement.strip())
        return text.replace("%%", "%")

    common = {
        "queue_id": ":queue_id",
        "owner_id": ":owner_id",
        "lock_timeout": f"'{LOCK_TIMEOUT}'",
        "statement_timeout": f"'{STATEMENT_TIMEOUT}'",
        "ttl": f"interval '{TTL_SECONDS} seconds'",
        "limit": "1",
        "max_leases": str(MAX_LEASES),
        "release_skip": f"interval '{RELEASE_SKIP_SECONDS} seconds'",
    }
    lease = {**common, "item_id": ":c_id", "lease_token": "(:c_lease_token)::uuid"}
    decision = {
        **lease,
        "reviewer_id": ":owner_id",
        "verdict": "'approve'",
        "reason_code": f"'{reason_code}'",
        # The item's stored hash, from the claim's row: what the services hash from the row.
        "evidence_hash": ":c_evidence_hash",
        "note": "''",
        "supersedes_id": "NULL",
        "corrected_verdict": "NULL",
        "qa_draw": QA_DRAW,
        # The bench queue has no evidence rules, so nothing warns: as the services bind it.
        "warnings_seen": "true",
        "time_zone": "'UTC'",
        "suggestion_view": "NULL",
        "suggestion_shown_at": "NULL",
    }
    # The round trips mirror the services'. claim_next sends BEGIN, the guard, the renew, the
    # claim and COMMIT together (runner.run_together); submit_decision sends BEGIN, the
    # timeouts, the close-and-insert, COMMIT and the apply workers' wake-up together (the
    # wake-up in a transaction of its own after the COMMIT). The statements are prepared
    # (server-side binding), so pgbench runs with -M prepared. One difference: pgbench cannot
    # read a result inside a pipeline (\gset), so its claim leaves the pipeline and its COMMIT
    # joins the decide's pipeline: one round trip more than the services.
    return "\n".join(
        [
            f"\\set queue_id {queue_id}",
            f"\\set owner_id {first_user} + (:client_id % {users})",
            "\\startpipeline",
            "BEGIN;",
            bind(access_sql.SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE, common) + ";",
            bind(leases_sql.RENEW_OWN_LIVE_LEASE, common) + ";",
            "\\endpipeline",
            bind(leases_sql.CLAIM_NEXT_ITEM, common) + "\n\\gset c_",
            "\\startpipeline",
            "COMMIT;",
            "BEGIN;",
            bind(access_sql.SET_LOCAL_TIMEOUTS, lease) + ";",
            bind(decisions_sql.CLOSE_AND_RECORD_DECISION, decision) + ";",
            "COMMIT;",
            outbox_sql.WAKE_APPLY_WORKERS + ";",
            "\\endpipeline",
            "",
        ]
    )


def services_worker(args: tuple[int, int, float], ready) -> tuple[int, float]:
    user_id, queue_id, seconds = args
    queue, me = reviewer_process(user_id, queue_id)
    ready()
    done = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline and review_next(queue, me):
        done += 1
    return done, peak_rss_mb()


def floor_worker(args: tuple[int, int, float, str], ready) -> tuple[int, float]:
    """The services' statements and round trips through psycopg alone (see the docstring).

    Round trip by round trip as claim_next and submit_decision send them: BEGIN, the guard,
    the renew, the claim and COMMIT; BEGIN, the timeouts, the close-and-insert, COMMIT and
    the wake-up. Parameters as the pgbench script's. As run_together does, the connection
    writes BEGIN and COMMIT itself (it is in autocommit), so a round trip has one Sync.
    """
    from datetime import timedelta

    import psycopg

    from queue_app.db.statements import access as access_sql
    from queue_app.db.statements import decisions as decisions_sql
    from queue_app.db.statements import leases as leases_sql
    from queue_app.db.statements import outbox as outbox_sql

    user_id, queue_id, seconds, reason_code = args
    conn = psycopg.connect(os.environ["DATABASE_URL"], prepare_threshold=0, autocommit=True)
    common = {
        "queue_id": queue_id,
        "owner_id": user_id,
        "lock_timeout": LOCK_TIMEOUT,
        "statement_timeout": STATEMENT_TIMEOUT,
        "ttl": timedelta(seconds=TTL_SECONDS),
        "max_leases": MAX_LEASES,
        "release_skip": timedelta(seconds=RELEASE_SKIP_SECONDS),
    }
    decision = {
        "reviewer_id": user_id,
        "verdict": "approve",
        "reason_code": reason_code,
        "note": "",
        "supersedes_id": None,
        "corrected_verdict": None,
        "qa_draw": int(QA_DRAW),
        "warnings_seen": True,
        "time_zone": "UTC",
        "suggestion_view": None,
        "suggestion_shown_at": None,
    }

    def together(
        steps: list[tuple[str, dict]], *, begin: bool = False, commit: bool = False, then=()
    ) -> list:
        cursors = [conn.cursor() for _ in steps]
        with conn.pipeline():
            if begin:
                conn.execute(b"BEGIN", prepare=False)
            for cursor, (statement, params) in zip(cursors, steps, strict=True):
                cursor.execute(statement, params)
            if commit:
                conn.execute(b"COMMIT", prepare=False)
                for statement in then:
                    conn.execute(statement, prepare=False)
        return cursors

    ready()
    done = 0
    columns: list[str] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        *_, claim = together(
            [
                (access_sql.SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE, common),
                (leases_sql.RENEW_OWN_LIVE_LEASE, common),
                (leases_sql.CLAIM_NEXT_ITEM, common),
            ],
            begin=True,
            commit=True,
        )
        row = claim.fetchone()
        if row is None:
            break
        columns = columns or [c.name for c in claim.description]
        lease = {
            **common,
            "item_id": row[columns.index("id")],
            "lease_token": row[columns.index("lease_token")],
        }
        lease["evidence_hash"] = row[columns.index("evidence_hash")]
        _, recorded = together(
            [
                (access_sql.SET_LOCAL_TIMEOUTS, lease),
                (decisions_sql.CLOSE_AND_RECORD_DECISION, {**lease, **decision}),
            ],
            begin=True,
            commit=True,
            then=[outbox_sql.WAKE_APPLY_WORKERS],
        )
        if recorded.fetchone() is None:
            raise RuntimeError("the floor's decide found no lease")
        done += 1
    conn.close()
    return done, peak_rss_mb()


def run_python(
    clients: int, users: list[int], queue_id: int, seconds: float, *, floor_reason: str = ""
) -> dict:
    """Run the services' cycle in `clients` processes (with floor_reason: the floor's)."""
    # Every process is set up before any starts its cycles (bench.common.start_together).
    if floor_reason:
        worker, args = floor_worker, [(u, queue_id, seconds, floor_reason) for u in users]
    else:
        worker, args = services_worker, [(u, queue_id, seconds) for u in users]
    _, results = start_together(worker, args[:clients])
    cycles = sum(r[0] for r in results)
    return {
        "cycles": cycles,
        "per_second": round(cycles / seconds, 1),
        "peak_rss_mb_per_process": max(r[1] for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    clients_list, seconds, reps, stock = (
        ([1, 2], 1.0, 1, 5_000) if args.smoke else ([1, 8, 32], 10.0, 3, 360_000)
    )

    db, queue, reason, users = stocked_queue(
        DB, smoke=args.smoke, slug="cycle", reviewers=max(clients_list), stock=stock
    )
    script = pgbench_script(
        queue_id=queue.pk, reason_code=reason.code, first_user=min(users), users=max(clients_list)
    )

    results = {"machine": machine(), "smoke": args.smoke, "seconds": seconds, "levels": {}}
    results["repetitions"] = reps
    for clients in clients_list:
        # The two sides alternate, `reps` times each, and the medians are compared: a burst of
        # noise from elsewhere on the machine then lands on one run, not on one side.
        runs = []
        for _ in range(reps):
            ours = run_python(clients, users, queue.pk, seconds)
            base = run_pgbench(clients, script, seconds, db)
            floor = run_python(clients, users, queue.pk, seconds, floor_reason=reason.code)
            runs.append(
                {
                    "services": ours["per_second"],
                    "pgbench": base["per_second"],
                    "floor": floor["per_second"],
                }
            )
            print(
                f"   clients={clients:>2}: services {ours['per_second']}/s, "
                f"pgbench {base['per_second']}/s, psycopg floor {floor['per_second']}/s",
                flush=True,
            )
        ours_rate = statistics.median(r["services"] for r in runs)
        base_rate = statistics.median(r["pgbench"] for r in runs)
        floor_rate = statistics.median(r["floor"] for r in runs)
        # Each run's sides ran back to back; the median of those paired ratios is the figure
        # (a ratio of the two medians would pair runs minutes apart).
        ratio = round(statistics.median(r["services"] / r["pgbench"] for r in runs), 2)
        floor_ratio = round(statistics.median(r["floor"] / r["pgbench"] for r in runs), 2)
        of_floor = round(statistics.median(r["services"] / r["floor"] for r in runs), 2)
        results["levels"][str(clients)] = {
            "services": {
                "per_second": round(ours_rate, 1),
                "peak_rss_mb_per_process": ours["peak_rss_mb_per_process"],
            },
            "pgbench": {"per_second": round(base_rate, 1), "failed": base["failed"]},
            "floor": {"per_second": round(floor_rate, 1)},
            "ratio": ratio,
            "floor_ratio": floor_ratio,
            "services_of_floor": of_floor,
            "runs": runs,
        }
        print(
            f"B3 clients={clients:>2}: services {ours_rate:.1f}/s, pgbench {base_rate:.1f}/s, "
            f"floor {floor_rate:.1f}/s (medians of {reps}), ratio {ratio}, floor/pgbench "
            f"{floor_ratio}, services/floor {of_floor} (medians of the paired runs)",
            flush=True,
        )
    results["peak_rss_mb"] = peak_rss_mb()
    print("wrote", write_results("cycle-smoke" if args.smoke else "cycle", results))


if __name__ == "__main__":
    main()
