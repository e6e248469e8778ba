"""Where a claim + decide cycle spends its time: SQL round trips and a cProfile of the services.

Counts the statements one cycle (claim_next + submit_decision) sends, lists them in order,
splits wall time between the database (as Django's cursor wrapper times it) and the rest,
and prints cProfile's top functions by own time. docs/performance.md reads its figures.
It also times B3's psycopg floor (bench/cycle.py: the same statements in the same round trips,
psycopg alone) in this process: the client CPU Django and the services add is the difference.

    .venv/bin/python bench/profile_cycle.py            # 300 profiled cycles
    .venv/bin/python bench/profile_cycle.py --smoke    # 20 cycles
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    bench_database,
    drop_database,
    load_pending,
    machine,
    process_cpu_seconds,
    review_next,
    scratch_database,
    write_results,
)

DB = "rc_bench_profile"


def _cycle(queue: Any, reviewer: Any) -> None:
    assert review_next(queue, reviewer)


def _label(statement: str) -> str:
    """Shorten a statement to its opening words, for counting."""
    return re.sub(r"\d+", "N", " ".join(statement.split()))[:90]


def _is_transaction_control(statement: str | None) -> bool:
    return bool(statement) and statement.split()[0].upper() in {
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    cycles = 20 if args.smoke else 300

    db = bench_database(DB, smoke=args.smoke)
    scratch_database(db)
    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from queue_app.models import Queue, ReasonCode

    try:
        group = Group.objects.create(name="Profile")
        queue = Queue.objects.create(slug="profile", name="Profile")
        queue.reviewer_groups.add(group)
        ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="OK")
        reviewer = User.objects.create_user("profile-reviewer")
        reviewer.groups.add(group)
        load_pending(queue.pk, 8 * cycles + 40, prefix="p")  # with their stored hashes
        for _ in range(20):  # warm caches; the hot statements get prepared and planned
            _cycle(queue, reviewer)

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        server0 = process_cpu_seconds(backend)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(cycles):
            _cycle(queue, reviewer)
        wall, client_cpu = time.perf_counter() - t0, time.process_time() - c0
        server_cpu = process_cpu_seconds(backend) - server0

        # The floor on the same rows, for as long as the services took: client CPU per cycle.
        from bench.cycle import floor_worker

        floor_user = User.objects.create_user("profile-floor")
        floor_user.groups.add(group)
        c0 = time.process_time()
        floor_cycles, _ = floor_worker((floor_user.pk, queue.pk, wall, "ok"), lambda: None)
        floor_cpu = time.process_time() - c0

        # The statements, in order, on a separate pass: recording them costs client time.
        # Django's query log has no text for a prepared statement, so the texts come from an
        # execute wrapper (every cursor statement passes through it, in the same order);
        # BEGIN/COMMIT/SAVEPOINT come from the log alone.
        texts: list[str] = []

        def record(execute, sql, params, many, context):
            texts.append(sql)
            return execute(sql, params, many, context)

        with CaptureQueriesContext(connection) as ctx, connection.execute_wrapper(record):
            for _ in range(cycles):
                _cycle(queue, reviewer)
        sent = iter(texts)
        labels = [
            _label(q["sql"] if _is_transaction_control(q["sql"]) else next(sent))
            for q in ctx.captured_queries
        ]
        per_cycle = len(ctx.captured_queries) / cycles
        counts = Counter(labels)
        one_cycle = labels[: round(per_cycle)]

        # CPU time, not wall: on a loaded machine wall time is mostly waiting for a core.
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for _ in range(cycles):
            _cycle(queue, reviewer)
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(r"queue_app|logging/__init__|json|hashlib", 25)

        results = {
            "machine": machine(),
            "smoke": args.smoke,
            "cycles": cycles,
            "statements_per_cycle": round(per_cycle, 2),
            "one_cycle": one_cycle,
            "statement_counts_per_cycle": {k: round(v / cycles, 2) for k, v in counts.items()},
            "wall_ms_per_cycle": round(wall / cycles * 1000, 3),
            "client_cpu_ms_per_cycle": round(client_cpu / cycles * 1000, 3),
            "server_cpu_ms_per_cycle": round(server_cpu / cycles * 1000, 3),
            "floor_client_cpu_ms_per_cycle": round(floor_cpu / max(floor_cycles, 1) * 1000, 3),
        }
        print(f"statements per cycle: {per_cycle:.2f}")
        for i, label in enumerate(one_cycle, 1):
            print(f"  {i:>2}. {label}")
        print(f"wall {results['wall_ms_per_cycle']} ms/cycle")
        print(
            f"CPU per cycle: client (this process) {results['client_cpu_ms_per_cycle']} ms, "
            f"server backend {results['server_cpu_ms_per_cycle']} ms; the psycopg floor's "
            f"client {results['floor_client_cpu_ms_per_cycle']} ms"
        )
        print(out.getvalue())
    finally:
        drop_database(db)
    print("wrote", write_results("profile_cycle-smoke" if args.smoke else "profile_cycle", results))


if __name__ == "__main__":
    main()
