"""Where the apply worker's drain (B5's throughput half) spends its time, and what a change buys.

B5 drains N bulk-written decisions with `apply_batch` (bench/apply.py). Ordering effects per
item and recording superseded decisions made each drain do more; this script shows where the
time goes on a small local dataset, without the full bench:

- `--profile`: one drain under cProfile, the top functions by cumulative and own time, and
  the wall time per statement kind (an execute wrapper);
- the default: an A/B run in one process, wall time and CPU time (this process and its
  server process) per decision. Variants of the worker's statements are swapped
  into `queue_app.db.statements.outbox` in turn and each drains a fresh N decisions, alternating
  over `--rounds` so machine load hits every variant alike; the result is each variant's rate as a
  ratio of the first variant's (the median over rounds).

    .venv/bin/python bench/profile_apply.py --db rc_bench_profile_apply --n 1000 --batch 10
    .venv/bin/python bench/profile_apply.py --profile --n 2000 --batch 100
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import logging
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import process_cpu_seconds, scratch_database

# The claim and the applied insert as they were before effects were ordered per item (commit
# bb26e7e), adapted to today's columns only: the claim reports item_sequence 1 (every bench
# item has one decision) and the insert writes status 'applied' (the column's default).
CLAIM_BEFORE_ORDERING = """
SELECT decision_id, attempts, 1 AS item_sequence
  FROM queue_app_effectjob
 WHERE done_at IS NULL AND NOT dead AND next_attempt_at <= now()
 ORDER BY next_attempt_at
 LIMIT %(limit)s
   FOR UPDATE SKIP LOCKED
"""

INSERT_APPLIED_BEFORE_SUPERSEDED = """
INSERT INTO queue_app_applieddecision (decision_id, applied_at, outcome)
VALUES (%(decision_id)s, clock_timestamp(), %(outcome)s::jsonb)
ON CONFLICT (decision_id) DO NOTHING
RETURNING decision_id, status
"""


def variants() -> dict[str, dict[tuple[str, str], Any]]:
    """Name -> what that variant swaps in: {(module, attribute): value}; empty for today's."""
    from queue_app.db.runner import fetch_dicts

    unprepared = {("queue_app.apply", "fetch_prepared"): fetch_dicts}
    return {
        "today": {},
        "unprepared (before the fix)": unprepared,
        "unprepared, claim before ordering": {
            **unprepared,
            ("queue_app.db.statements.outbox", "CLAIM_DUE_EFFECT_JOBS"): CLAIM_BEFORE_ORDERING,
        },
        "unprepared, claim and insert before": {
            **unprepared,
            ("queue_app.db.statements.outbox", "CLAIM_DUE_EFFECT_JOBS"): CLAIM_BEFORE_ORDERING,
            (
                "queue_app.db.statements.outbox",
                "INSERT_APPLIED_DECISION",
            ): INSERT_APPLIED_BEFORE_SUPERSEDED,
        },
    }


def _fixture() -> tuple[Any, Any, int]:
    from django.contrib.auth.models import User

    from bench.apply import setup
    from queue_app.models import Queue, ReasonCode

    if not Queue.objects.filter(slug="apply").exists():
        setup()
    queue = Queue.objects.get(slug="apply")
    reviewer = User.objects.get(username="apply-0")
    return queue, reviewer, ReasonCode.objects.get(queue=queue).pk


def load(n: int, fixture: tuple[Any, Any, int]) -> None:
    """Bulk-write n decided items with their decisions and effect jobs (as B5 does)."""
    from django.db import connection

    from bench.apply import BULK_DECISIONS

    queue, reviewer, reason_id = fixture
    with connection.cursor() as cursor:
        cursor.execute(
            BULK_DECISIONS,
            {
                "queue_id": queue.pk,
                "prefix": f"p{time.time_ns()}-",
                "n": n,
                "reviewer_id": reviewer.pk,
                "reason_id": reason_id,
            },
        )
        cursor.execute("VACUUM ANALYZE queue_app_effectjob")


def _server_cpu() -> float:
    """CPU seconds the server process behind Django's connection has used (local server)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return process_cpu_seconds(pid)


def drain(batch: int) -> tuple[int, float, float]:
    """Apply every due decision with apply_batch(batch); return (count, wall s, CPU s).

    CPU is this process's plus its server process's: on a machine shared with other work the
    wall time swings with the load, the CPU a drain needs much less.
    """
    from queue_app.apply import apply_batch

    done = 0
    cpu = time.process_time() + _server_cpu()
    start = time.perf_counter()
    while applied := apply_batch(batch_size=batch):
        done += applied
    wall = time.perf_counter() - start
    return done, wall, time.process_time() + _server_cpu() - cpu


def ab(n: int, batch: int, rounds: int, fixture: tuple[Any, Any, int]) -> dict[str, Any]:
    import importlib

    swaps = variants()
    targets = {key for swap in swaps.values() for key in swap}
    original = {key: getattr(importlib.import_module(key[0]), key[1]) for key in targets}
    rates: dict[str, list[float]] = collections.defaultdict(list)
    cpu_ms: dict[str, list[float]] = collections.defaultdict(list)
    names = list(swaps)
    try:
        for r in range(rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                for (module, attr), value in {**original, **swaps[name]}.items():
                    setattr(importlib.import_module(module), attr, value)
                load(n, fixture)
                done, seconds, cpu = drain(batch)
                assert done == n, (done, n)
                rates[name].append(n / seconds)
                cpu_ms[name].append(cpu * 1000 / n)
    finally:
        for (module, attr), value in original.items():
            setattr(importlib.import_module(module), attr, value)
    base = statistics.median(rates[names[0]])
    base_cpu = statistics.median(cpu_ms[names[0]])
    return {
        name: {
            "median_per_s": round(statistics.median(rates[name]), 1),
            "ratio_to_today": round(statistics.median(rates[name]) / base, 2),
            "cpu_ms_per_decision": round(statistics.median(cpu_ms[name]), 3),
            "cpu_ratio_to_today": round(statistics.median(cpu_ms[name]) / base_cpu, 2),
        }
        for name in names
    }


def profile(n: int, batch: int, fixture: tuple[Any, Any, int]) -> None:
    from django.db import connection

    per_statement: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])

    def timed(execute, statement, params, many, context):
        start = time.perf_counter()
        try:
            return execute(statement, params, many, context)
        finally:
            key = " ".join(statement.split())[:70]
            key = "SAVEPOINT / RELEASE" if "SAVEPOINT" in key else key
            per_statement[key][0] += 1
            per_statement[key][1] += time.perf_counter() - start

    load(n, fixture)
    profiler = cProfile.Profile()
    with connection.execute_wrapper(timed):
        profiler.enable()
        done, seconds, _ = drain(batch)
        profiler.disable()
    print(f"drained {done} in {seconds:.2f} s: {done / seconds:.1f}/s (batch {batch})")
    for key, (count, total) in sorted(per_statement.items(), key=lambda kv: -kv[1][1]):
        print(f"{total * 1000:9.0f} ms {count:6d} x {total / count * 1000:7.3f} ms  {key}")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(25)
    stats.sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="rc_bench_profile_apply")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    scratch_database(args.db)
    # The log effect's lines are formatted as in production, and go nowhere (as in B5).
    logging.basicConfig(stream=open(os.devnull, "w"), level=logging.INFO, force=True)  # noqa: SIM115
    fixture = _fixture()
    load(args.n, fixture)  # warm-up: caches, plans, the first batch's imports
    drain(args.batch)
    if args.profile:
        profile(args.n, args.batch, fixture)
    else:
        result = ab(args.n, args.batch, args.rounds, fixture)
        print(f"n={args.n} batch={args.batch} rounds={args.rounds}")
        for name, figures in result.items():
            print(
                f"  {name:38s} {figures['median_per_s']:8.1f}/s  x{figures['ratio_to_today']:<5}"
                f"  CPU {figures['cpu_ms_per_decision']:.3f} ms/decision"
                f"  x{figures['cpu_ratio_to_today']}"
            )


if __name__ == "__main__":
    main()
