"""B7: decision throughput at 32 clients over 1 queue and over 8, sealed chain vs global lock.

The baseline is the design the sealed chain replaced: every decision took one advisory lock
(the chain's) in its insert trigger and held it through its commit, so decisions in every queue
committed one at a time. It runs exactly that trigger (taken from the migration that last
defined it, installed into the scratch database for its runs and replaced by the current one
afterwards); the candidate is the
current code, with a sealer process running beside the reviewers as the apply worker would.
Each side runs the same reviewer cycle (claim_next + submit_decision) in 32 processes, all set
up before any starts, spread over 1 queue or over 8; the sides alternate, medians compared.
The baseline also gets back the other serialisation point of the old code: the apply workers'
NOTIFY sent from inside the decision's transaction (which serialised the commits behind the
notification queue's lock);
its services still send today's wake-up after the commit as well, one cheap round trip more.
pgbench's commit rate at 32 clients (one-row INSERT per transaction) gives the scale.

What the global lock costs depends on what a commit's WAL flush costs, and this machine's
disk flushes in about 80 microseconds (pg_test_fsync), far less than one decision's CPU. So
the scenarios run at this machine's own flush and again with every flush made slower by a
fixed time, as a network volume or a synchronous standby makes it: commit_delay with
commit_siblings = 0, set on the scratch database, makes whichever backend flushes the WAL
sleep that long first while it holds the WAL write lock, so every commit waits for it and
commits that arrive meanwhile share the flush (group commit), as on a slower device.

    .venv/bin/python bench/decisions.py            # full run (~14 min)
    .venv/bin/python bench/decisions.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    bench_database,
    load_pending,
    machine,
    peak_rss_mb,
    review_next,
    reviewer_process,
    run_pgbench,
    scratch_database,
    start_together,
    write_results,
)

DB = "rc_bench_decisions"
# The old code's insert trigger, taken from the migration that last defined it: the
# same checks as today's, plus the chain lock and the chain link assigned under it.
BASELINE_SQL = "queue_app.migrations.0007_decision_audit"
# The old code had no sealer's list: the baseline runs without the trigger that fills it.
SEALING_TRIGGER = "decision_queue_for_sealing"
# The old code woke the apply workers from inside the decision's transaction (a NOTIFY trigger
# on the effect job insert): the baseline runs with that trigger put back.
NOTIFY_MIGRATION = "queue_app.migrations.0019_wake_workers_after_commit"


def setup(queues: int, reviewers: int, stock: dict[int, int]) -> tuple[list[int], list[int]]:
    """Create the queues (reason "ok"), reviewers who may work in all of them, and items."""
    from django.contrib.auth.models import Group, User

    from queue_app.models import Queue, ReasonCode

    group = Group.objects.create(name="b7 reviewers")
    queue_ids = []
    for i in range(queues):
        queue = Queue.objects.create(slug=f"b7-{i}", name=f"B7 {i}")
        queue.reviewer_groups.add(group)
        ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="OK")
        load_pending(queue.pk, stock.get(i, stock[-1]), prefix=f"b7q{i}")
        queue_ids.append(queue.pk)
    users = []
    for i in range(reviewers):
        user = User.objects.create_user(f"b7-{i}")
        user.groups.add(group)
        users.append(user.pk)
    return queue_ids, users


def baseline_trigger() -> str:
    """Return the CREATE FUNCTION of the chain-locking decision insert trigger."""
    import importlib

    forward = importlib.import_module(BASELINE_SQL).FORWARD
    start = forward.index("CREATE OR REPLACE FUNCTION queue_app_decision_before_insert()")
    return forward[start : forward.index("$$;", start) + 3]


def use_baseline(on: bool, current_definition: str) -> None:
    """Install the global-lock trigger (on) or put the current one back (off)."""
    import importlib

    from django.db import connection

    notify = importlib.import_module(NOTIFY_MIGRATION)
    with connection.cursor() as cursor:
        if on:
            cursor.execute(baseline_trigger())
            cursor.execute(f"ALTER TABLE queue_app_decision DISABLE TRIGGER {SEALING_TRIGGER}")
            cursor.execute(notify.FORWARD)  # idempotent: a run stopped halfway left it behind
            cursor.execute(notify.BACKWARD)
        else:
            cursor.execute(current_definition)
            cursor.execute(f"ALTER TABLE queue_app_decision ENABLE TRIGGER {SEALING_TRIGGER}")
            cursor.execute(notify.FORWARD)


def _reviewer(args: tuple[int, int, float], ready) -> int:
    user_id, queue_id, seconds = args
    queue, me = reviewer_process(user_id, queue_id)
    ready()
    done = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        if not review_next(queue, me):
            return -1  # out of items before the time was up: run() says so
        done += 1
    return done


def _sealer(stop) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
    import django

    django.setup()
    from queue_app.chain import seal_all

    while not stop.is_set():
        seal_all()
        stop.wait(1.0)
    seal_all()


def run(users: list[int], queue_ids: list[int], seconds: float, *, sealer: bool) -> float:
    """Return decisions per second with one reviewer process per user over the queues."""
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    sealing = ctx.Process(target=_sealer, args=(stop,)) if sealer else None
    if sealing:
        sealing.start()
    args = [(u, queue_ids[i % len(queue_ids)], seconds) for i, u in enumerate(users)]
    try:
        _, results = start_together(_reviewer, args)
    finally:
        if sealing:
            stop.set()
            sealing.join(60)
    if min(results) < 0:
        raise RuntimeError("a queue ran out of items before the run's end: raise the stock")
    return round(sum(results) / seconds, 1)


def slow_flush(dbname: str, added_ms: int) -> None:
    """Make every WAL flush of sessions opened on dbname from now on take added_ms longer
    (0: the machine's own flush). See the module's docstring."""
    from django.db import connection

    with connection.cursor() as cursor:
        if added_ms:
            cursor.execute(f'ALTER DATABASE "{dbname}" SET commit_delay = {added_ms * 1000}')
            cursor.execute(f'ALTER DATABASE "{dbname}" SET commit_siblings = 0')
        else:
            cursor.execute(f'ALTER DATABASE "{dbname}" RESET commit_delay')
            cursor.execute(f'ALTER DATABASE "{dbname}" RESET commit_siblings')
    connection.close()  # the next sessions start with the setting


def pgbench_commits(clients: int, seconds: float, dbname: str) -> float:
    """Return pgbench's commits per second for a one-row INSERT per transaction."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS b7_commit (at timestamptz)")
    script = "INSERT INTO b7_commit (at) VALUES (now());\n"
    return run_pgbench(clients, script, seconds, dbname)["per_second"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument(
        "--flush-ms",
        type=int,
        nargs="+",
        help="added flush levels in ms (default: 0 1 5 10; the restated target needs 0 and 5)",
    )
    parser.add_argument(
        "--spread",
        choices=("1", "8"),
        nargs="+",
        help="queues the decisions are spread over (default: 1 8; the target is judged at 8)",
    )
    parser.add_argument("--reps", type=int, help="runs of each side per scenario (default 3)")
    args = parser.parse_args()
    clients, seconds, reps, stock, flush_levels = (
        (4, 1.0, 1, {0: 6_000, -1: 3_000}, (0, 2))
        if args.smoke
        # Enough for every run at about 800 decisions a second: queue 0 serves the 1-queue
        # runs (and its share of the 8-queue ones), the others only the 8-queue runs.
        else (32, 10.0, 3, {0: 300_000, -1: 40_000}, (0, 1, 5, 10))
    )
    flush_levels = tuple(args.flush_ms) if args.flush_ms else flush_levels
    reps = args.reps or reps
    spreads = set(args.spread or ("1", "8"))
    db = bench_database(DB, smoke=args.smoke)
    scratch_database(db)
    from django.db import connection

    queue_ids, users = setup(8, clients, stock)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef('queue_app_decision_before_insert'::regproc)")
        current = cursor.fetchone()[0]
    connection.close()

    results = {"machine": machine(), "smoke": args.smoke, "seconds": seconds, "clients": clients}
    results["repetitions"] = reps
    results["flush_levels"] = []
    for flush_ms in flush_levels:
        slow_flush(db, flush_ms)
        level = {"added_flush_ms": flush_ms, "scenarios": {}}
        for name, queues in (("1 queue", queue_ids[:1]), ("8 queues", queue_ids)):
            if name.split()[0] not in spreads:
                continue
            runs = []
            for _ in range(reps):
                use_baseline(True, current)
                connection.close()
                before = run(users, queues, seconds, sealer=False)
                use_baseline(False, current)
                connection.close()
                after = run(users, queues, seconds, sealer=True)
                runs.append({"global_lock": before, "sealed": after})
                print(
                    f"   +{flush_ms} ms flush, {name}: global lock {before}/s, sealed {after}/s",
                    flush=True,
                )
            before = statistics.median(r["global_lock"] for r in runs)
            after = statistics.median(r["sealed"] for r in runs)
            ratio = round(statistics.median(r["sealed"] / r["global_lock"] for r in runs), 2)
            level["scenarios"][name] = {
                "global_lock": before,
                "sealed": after,
                "ratio": ratio,
                "runs": runs,
            }
            print(
                f"B7 +{flush_ms} ms flush, {name}: global lock {before}/s, sealed {after}/s, "
                f"ratio {ratio}",
                flush=True,
            )
        level["pgbench_commits_per_second"] = pgbench_commits(clients, seconds, db)
        print(
            f"B7 +{flush_ms} ms flush: pgbench commits at {clients} clients: "
            f"{level['pgbench_commits_per_second']}/s",
            flush=True,
        )
        results["flush_levels"].append(level)
    slow_flush(db, 0)
    # The machine's own flush, where the earlier runs' figures came from.
    results["scenarios"] = results["flush_levels"][0]["scenarios"]
    results["pgbench_commits_per_second"] = results["flush_levels"][0]["pgbench_commits_per_second"]
    # Every decision of the sealed runs got sealed. (The chain as a whole does not verify here:
    # the baseline runs kept extending the old per-decision chain after batches had been
    # chained to its head, which the one-way migration never does.)
    from queue_app.chain import seal_all
    from queue_app.models import UnsealedDecision

    seal_all()
    results["all_sealed"] = not UnsealedDecision.objects.exists()
    results["peak_rss_mb"] = peak_rss_mb()
    print("wrote", write_results("decisions-smoke" if args.smoke else "decisions", results))


if __name__ == "__main__":
    main()
