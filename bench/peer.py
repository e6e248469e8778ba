"""B6: our claim + decide cycle against procrastinate's job cycle, same server, same clients.

procrastinate is a PostgreSQL job queue for Python. Its cycle here: a worker fetches a
pre-deferred no-op job, runs it and marks it done. Ours: a process claims a pre-loaded item
and submits a decision (claim_next + submit_decision through the services). Both drain M units
with 1, 8 and 32 processes (procrastinate: one worker process each, concurrency 1); the rate
is units per second of wall time from the moment every process is set up (imports, Django, a
connection) until the last one finds no work. Deferring (procrastinate) is timed too, for
context.

A third side, the psycopg floor, drains the same items with B3's floor (bench/cycle.py): our
cycle's statements in the services' round trips from psycopg alone, with no Django and nothing
decided in Python between them. What it reaches of procrastinate is the most any Python client
of our statements could reach here; what ours reaches of it is what Django and the application
cost on top. It runs in the same rounds, between the other two.

Before each drain both sides' tables are vacuumed and analysed (untimed), so every run starts
from the same state whatever the server's autovacuum does: the machine's own PostgreSQL 15
runs with autovacuum off, the embedded 18 with it on, and dead rows left by earlier runs slow
a queue's fetch (procrastinate's most: its finished jobs stay in its table).

    .venv/bin/python bench/peer.py            # full run
    .venv/bin/python bench/peer.py --smoke    # tiny, for CI
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
    bench_database,
    bench_queue,
    load_pending,
    machine,
    peak_rss_mb,
    review_next,
    reviewer_process,
    scratch_database,
    start_together,
    write_results,
)

DB = "rc_bench_peer"
OUR_TABLES = "queue_app_reviewitem, queue_app_decision, queue_app_itemevent, queue_app_effectjob"
PEER_TABLES = "procrastinate_jobs, procrastinate_events, procrastinate_workers"


def _conninfo() -> str:
    # scratch_database() points DATABASE_URL at this run's database; spawned workers inherit it.
    return os.environ["DATABASE_URL"]


def _procrastinate_app():
    import procrastinate

    # One pooled connection per worker (concurrency 1), as ours has one per process; the
    # default pool (4 connections) times 32 processes exceeds the server's max_connections.
    connector = procrastinate.PsycopgConnector(conninfo=_conninfo(), min_size=1, max_size=2)
    app = procrastinate.App(connector=connector)

    @app.task(name="noop", queue="bench")
    def noop() -> None:
        return None

    return app, noop


def _peer_worker(_: int, ready) -> tuple[float, float]:
    app, _noop = _procrastinate_app()
    ready()
    # run_worker opens the app's async pool itself. wait=False: exit once no job is left.
    app.run_worker(
        queues=["bench"],
        concurrency=1,
        wait=False,
        install_signal_handlers=False,
        delete_jobs="never",
    )
    return time.perf_counter(), peak_rss_mb()


def _our_worker(args: tuple[int, int], ready) -> tuple[float, float]:
    queue, me = reviewer_process(*args)
    ready()
    while review_next(queue, me):
        pass
    return time.perf_counter(), peak_rss_mb()


def _floor_drainer(args: tuple[int, int, str], ready) -> tuple[float, float]:
    from bench.cycle import floor_worker

    user_id, queue_id, reason_code = args
    # No time limit: the floor's loop ends at the first claim that finds nothing.
    floor_worker((user_id, queue_id, float("inf"), reason_code), ready)
    return time.perf_counter(), peak_rss_mb()


def _vacuum(tables: str) -> None:
    """VACUUM ANALYZE the tables, outside any transaction (see the module docstring)."""
    import psycopg

    with psycopg.connect(_conninfo(), autocommit=True) as conn:
        conn.execute(f"VACUUM (ANALYZE) {tables}")


def _server_autovacuum() -> str:
    import psycopg

    with psycopg.connect(_conninfo()) as conn:
        return conn.execute("SHOW autovacuum").fetchone()[0]


def _drain(target, args: list) -> tuple[float, float]:
    """Seconds from the moment every process is set up until the last one finds no work."""
    started, results = start_together(target, args)
    return max(end for end, _ in results) - started, max(rss for _, rss in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--name",
        default="peer",
        help="results file name (bench/run_all uses peer-local for the server at :5432)",
    )
    parser.add_argument(
        "--no-vacuum",
        action="store_true",
        help="skip the vacuum before each drain (what the runs before 2026-12-01 did)",
    )
    parser.add_argument("--clients", type=int, nargs="+", help="process counts (default: 1 8 32)")
    args = parser.parse_args()
    clients_list, units, reps = ([2], 60, 1) if args.smoke else ([1, 8, 32], 3_000, 3)
    clients_list = args.clients or clients_list
    vacuum = (lambda _tables: None) if args.no_vacuum else _vacuum

    scratch_database(bench_database(DB, smoke=args.smoke))
    from django.db import connection

    queue, reason, users = bench_queue("peer", reviewers=max(clients_list))

    app, noop = _procrastinate_app()
    with app.open():
        app.schema_manager.apply_schema()
    connection.close()

    from importlib.metadata import version

    results = {
        "machine": machine(),
        "smoke": args.smoke,
        # Its fetch path changes between releases; a rate is only comparable at one version.
        "procrastinate": version("procrastinate"),
        "units": units,
        "repetitions": reps,
        "server_autovacuum": _server_autovacuum(),
        "vacuumed_before_each_drain": not args.no_vacuum,
        "levels": {},
    }
    for clients in clients_list:
        # The two sides alternate, `reps` times each, and the medians are compared.
        runs = []
        for _ in range(reps):
            load_pending(queue.pk, units, prefix="peer")
            connection.close()
            vacuum(OUR_TABLES)
            ours_s, ours_rss = _drain(_our_worker, [(users[i], queue.pk) for i in range(clients)])

            load_pending(queue.pk, units, prefix="peer")
            connection.close()
            vacuum(OUR_TABLES)
            floor_s, _ = _drain(
                _floor_drainer, [(users[i], queue.pk, reason.code) for i in range(clients)]
            )

            with app.open():
                t0 = time.perf_counter()
                for _ in range(units):
                    noop.defer()
                defer_s = time.perf_counter() - t0
            vacuum(PEER_TABLES)
            peer_s, peer_rss = _drain(_peer_worker, list(range(clients)))
            runs.append(
                {
                    "ours": round(units / ours_s, 1),
                    "floor": round(units / floor_s, 1),
                    "procrastinate": round(units / peer_s, 1),
                    "procrastinate_defer": round(units / defer_s, 1),
                }
            )
            print(
                f"   clients={clients:>2}: ours {units / ours_s:.0f}/s, "
                f"psycopg floor {units / floor_s:.0f}/s, procrastinate {units / peer_s:.0f}/s",
                flush=True,
            )
        ours = statistics.median(r["ours"] for r in runs)
        peer = statistics.median(r["procrastinate"] for r in runs)
        defer = statistics.median(r["procrastinate_defer"] for r in runs)
        # The median of each run's paired ratio (the two sides ran back to back).
        ratio = statistics.median(r["ours"] / r["procrastinate"] for r in runs)
        floor = statistics.median(r["floor"] for r in runs)
        floor_ratio = statistics.median(r["floor"] / r["procrastinate"] for r in runs)
        results["levels"][str(clients)] = {
            "ours_per_second": round(ours, 1),
            "peer_per_second": round(peer, 1),
            "ratio": round(ratio, 2),
            "floor_per_second": round(floor, 1),
            "floor_ratio": round(floor_ratio, 2),
            "ours_of_floor": round(statistics.median(r["ours"] / r["floor"] for r in runs), 2),
            "peer_defer_per_second": round(defer, 1),
            "ours_peak_rss_mb": ours_rss,
            "peer_peak_rss_mb": peer_rss,
            "runs": runs,
        }
        print(
            f"B6 clients={clients:>2}: ours {ours:.0f}/s, procrastinate {peer:.0f}/s "
            f"(medians of {reps}), ratio {ratio:.2f}; psycopg floor {floor:.0f}/s, "
            f"floor/procrastinate {floor_ratio:.2f} (defer {defer:.0f}/s)",
            flush=True,
        )
    results["peak_rss_mb"] = peak_rss_mb()
    print("wrote", write_results(f"{args.name}-smoke" if args.smoke else args.name, results))


if __name__ == "__main__":
    main()
