"""A pipeline written at its sync against psycopg's one write per statement: B3's floor, A/B.

B3's psycopg floor (bench/cycle.py: the services' statements in their round trips, psycopg
alone) in one process, its pipelines written to the socket either at the sync, all at once, as
run_together does (runner.send_at_sync), or one statement at a time as psycopg writes them by
itself. The two alternate in rounds of a fixed time; each reads its cycles per second, this
process's CPU and the server's (every postgres process, bench.common.cpu_used_by_role) per
cycle, and the ratios pair the two within a round.

With --processes N (N > 1) each side runs N floor processes at once (B3's way: every process
set up before any starts, bench.common.start_together), the cores saturated as at B3's 8 and
32 processes; then only cycles per second are compared (the processes' start-up would count
in any CPU reading), and the results go to pipeline_sends-N.json, outside run_all's report.

    .venv/bin/python bench/pipeline_sends.py                  # ~1 min
    .venv/bin/python bench/pipeline_sends.py --processes 8    # ~2 min
    .venv/bin/python bench/pipeline_sends.py --smoke          # tiny, for CI
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    cpu_reading,
    cpu_used_by_role,
    drop_database,
    machine,
    paired_ratio,
    server_pids,
    start_together,
    stocked_queue,
    wait_for_new_server_processes,
    write_results,
)
from bench.cycle import floor_worker

DB = "rc_bench_pipeline_sends"
SIDES = {"at the sync": True, "one by one": False}


def _at_sync(args: tuple, ready) -> tuple[int, float]:
    return floor_worker(args, ready, write_at_sync=True)


def _one_by_one(args: tuple, ready) -> tuple[int, float]:
    return floor_worker(args, ready, write_at_sync=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--processes", type=int, default=1, help="floor processes per side")
    args = parser.parse_args()
    rounds, seconds, stock = (1, 0.5, 2_000) if args.smoke else (6, 5.0, 60_000)
    processes = max(1, args.processes)
    stock *= processes

    db, queue, reason, users = stocked_queue(
        DB, smoke=args.smoke, slug="sends", reviewers=processes, stock=stock
    )
    about = machine()

    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    try:
        for _ in range(rounds):
            for side, at_sync in SIDES.items():
                if processes > 1:
                    work = [(user, queue.pk, seconds, reason.code) for user in users]
                    _, out = start_together(_at_sync if at_sync else _one_by_one, work)
                    runs[side].append({"per_second": sum(cycles for cycles, _ in out) / seconds})
                    print(f"   {side}: {runs[side][-1]}", flush=True)
                    continue
                running = server_pids()
                before, t0 = cpu_reading(os.getpid()), time.perf_counter()
                cycles, _ = floor_worker(
                    (users[0], queue.pk, seconds, reason.code), lambda: None, write_at_sync=at_sync
                )
                wall = time.perf_counter() - t0
                # The floor's backend has hung up: its CPU counts once its postmaster reaped it.
                wait_for_new_server_processes(running)
                used = cpu_used_by_role(before, cpu_reading(os.getpid()))
                runs[side].append(
                    {
                        "per_second": cycles / wall,
                        "client_cpu_ms": used["load"] * 1000 / cycles,
                        "server_cpu_ms": used["postgres"] * 1000 / cycles,
                    }
                )
                print(f"   {side}: {runs[side][-1]}", flush=True)
    finally:
        drop_database(db)

    def median(side: str, key: str) -> float:
        return round(statistics.median(r[key] for r in runs[side]), 3)

    def paired(key: str) -> float | None:
        return paired_ratio(
            [r[key] for r in runs["at the sync"]], [r[key] for r in runs["one by one"]]
        )

    keys = ("per_second",) if processes > 1 else ("per_second", "client_cpu_ms", "server_cpu_ms")
    results = {
        "machine": about,
        "smoke": args.smoke,
        "processes": processes,
        "rounds": rounds,
        "seconds": seconds,
        "sides": {side: {key: median(side, key) for key in keys} for side in SIDES},
        "at_sync_to_one_by_one": {key: paired(key) for key in keys},
        "runs": runs,
    }
    print(f"pipeline sends: {results['sides']}, ratio {results['at_sync_to_one_by_one']}")
    name = "pipeline_sends" + (f"-{processes}" if processes > 1 else "")
    name += "-smoke" if args.smoke else ""
    print("wrote", write_results(name, results))


if __name__ == "__main__":
    main()
