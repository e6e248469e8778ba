"""B11: what PgBouncer (transaction mode) costs a reviewer's cycle, and how far a streaming
replica lags behind a primary taking decisions. One run, by hand or by run_all:

    .venv/bin/python bench/pooler.py            # full run
    .venv/bin/python bench/pooler.py --smoke    # tiny, for CI

Pooler: one process runs claim + decide cycles (bench.common.review_next, the services) against
a scratch database in alternating rounds: straight to PostgreSQL with prepared statements (the
default), straight without them (REVIEW_PREPARED_STATEMENTS=false), and through Debian's
PgBouncer in transaction mode (which cannot carry them: tests/pooling/). Each round's median
cycle time is compared with the direct round beside it; the ratios' median is reported.

Replica: the tests' primary and hot standby (tests/replication/cluster.py) hold a copy of the
scratch database; one process decides on the primary while another samples, every 20 ms, the
standby's replay lag (the router's figure, REPLICA_LAG) and the primary's pg_stat_replication.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    drop_database,
    machine,
    percentiles,
    review_next,
    stocked_queue,
    write_results,
)

BASE_DB = "rc_bench_pooler"


def _point(connection: Any, **changes: Any) -> None:
    from django.db import connections

    connections.close_all()
    connection.settings_dict.update(changes)


def pooler_cost(users: list[int], *, rounds: int, cycles: int) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.db import connection

    from queue_app.models import Queue
    from tests.pooling.conftest import start_pgbouncer, stop_pgbouncer

    direct = dict(connection.settings_dict)
    direct_options = dict(direct.get("OPTIONS", {}))
    unprepared = {k: v for k, v in direct_options.items() if k != "prepare_threshold"}
    pooled_options = {k: v for k, v in unprepared.items() if k not in ("options", "host", "port")}
    bouncer, proc = start_pgbouncer(direct, pool_size=4)
    sides: dict[str, dict[str, Any]] = {
        "direct_prepared": {
            "HOST": direct["HOST"],
            "PORT": direct["PORT"],
            "OPTIONS": direct_options,
        },
        "direct_unprepared": {
            "HOST": direct["HOST"],
            "PORT": direct["PORT"],
            "OPTIONS": unprepared,
        },
        "pgbouncer_transaction": {
            "HOST": bouncer.host,
            "PORT": str(bouncer.port),
            "OPTIONS": pooled_options,
            "DISABLE_SERVER_SIDE_CURSORS": True,
        },
    }
    medians: dict[str, list[float]] = {name: [] for name in sides}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    try:
        queue = Queue.objects.get(slug="pooler")
        reviewer = User.objects.get(pk=users[0])
        for _ in range(rounds):
            for name, changes in sides.items():
                _point(connection, **changes)
                queue = Queue.objects.get(pk=queue.pk)
                for _ in range(10):  # warm-up: connection, statement cache, prepared plans
                    review_next(queue, reviewer)
                times = []
                for _ in range(cycles):
                    start = time.perf_counter()
                    if review_next(queue, reviewer) is None:
                        raise SystemExit("the queue ran dry: raise the stock")
                    times.append((time.perf_counter() - start) * 1000)
                medians[name].append(statistics.median(times))
                samples[name].extend(times)
    finally:
        _point(
            connection,
            **{k: direct.get(k) for k in ("HOST", "PORT")},
            OPTIONS=direct_options,
            DISABLE_SERVER_SIDE_CURSORS=False,
        )
        stop_pgbouncer(proc, bouncer.folder)

    def ratio(side: str, base: str) -> float:
        return round(
            statistics.median(s / b for s, b in zip(medians[side], medians[base], strict=True)),
            3,
        )

    return {
        "pgbouncer_version": ".".join(map(str, bouncer.version)),
        "rounds": rounds,
        "cycles_per_round": cycles,
        "cycle_ms": {name: percentiles(times) for name, times in samples.items()},
        "ratio_pooled_vs_direct_unprepared": ratio("pgbouncer_transaction", "direct_unprepared"),
        "ratio_pooled_vs_direct_prepared": ratio("pgbouncer_transaction", "direct_prepared"),
        "ratio_unprepared_vs_prepared": ratio("direct_unprepared", "direct_prepared"),
    }


def replica_lag(users: list[int], *, seconds: float) -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.db import connection

    from queue_app.db.statements import replication as replication_sql
    from queue_app.models import Queue
    from tests.replication.cluster import start_replication

    direct = dict(connection.settings_dict)
    started = time.monotonic()
    pair = start_replication(direct)
    start_seconds = round(time.monotonic() - started, 1)
    lags: list[float] = []
    behind_bytes: list[int] = []
    replay_lag_ms: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        with pair.standby.connect(direct["NAME"]) as standby, pair.primary.connect() as primary:
            while not stop.is_set():
                lags.append(standby.execute(replication_sql.REPLICA_LAG).fetchone()[1])
                row = primary.execute(replication_sql.STANDBYS).fetchone()
                if row:
                    replay_lag_ms.append(row[3] * 1000)
                    behind_bytes.append(row[4] or 0)
                time.sleep(0.02)

    decided = 0
    try:
        _point(connection, **pair.primary.settings({}))
        queue = Queue.objects.get(slug="pooler")
        reviewer = User.objects.get(pk=users[0])
        sampler = threading.Thread(target=sample)
        sampler.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end and review_next(queue, reviewer) is not None:
            decided += 1
        stop.set()
        sampler.join()
        caught_up_from = time.monotonic()
        while not pair.caught_up():
            time.sleep(0.005)
        catch_up_ms = (time.monotonic() - caught_up_from) * 1000
    finally:
        stop.set()
        _point(connection, **{k: direct.get(k) for k in ("HOST", "PORT", "USER", "PASSWORD")})
        pair.stop()
    return {
        "fixture_start_seconds": start_seconds,
        "decisions": decided,
        "decisions_per_second": round(decided / seconds, 1),
        "samples": len(lags),
        "replica_lag_ms": percentiles([lag * 1000 for lag in lags] or [0.0])
        | {"max": round(max(lags, default=0) * 1000, 2)},
        "primary_replay_lag_ms": percentiles(replay_lag_ms) if replay_lag_ms else {},
        "bytes_behind_max": max(behind_bytes, default=0),
        "catch_up_after_last_decision_ms": round(catch_up_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    rounds, cycles, seconds = (2, 20, 1.0) if args.smoke else (5, 200, 20.0)
    stock = rounds * 3 * (cycles + 10) + int(seconds * 600) + 100
    db, _queue, _reason, users = stocked_queue(
        BASE_DB, smoke=args.smoke, slug="pooler", reviewers=1, stock=stock
    )
    try:
        results = {
            "smoke": args.smoke,
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": machine(),
            "pooler": pooler_cost(users, rounds=rounds, cycles=cycles),
            "replica": replica_lag(users, seconds=seconds),
        }
    finally:
        drop_database(db)
    path = write_results("pooler-smoke" if args.smoke else "pooler", results)
    pooler, replica = results["pooler"], results["replica"]
    print(f"wrote {path}")
    for name, figures in pooler["cycle_ms"].items():
        print(f"  {name:24} p50 {figures['p50']:.2f} ms  p90 {figures['p90']:.2f} ms")
    print(f"  pooled / direct (unprepared): {pooler['ratio_pooled_vs_direct_unprepared']}")
    print(f"  pooled / direct (prepared):   {pooler['ratio_pooled_vs_direct_prepared']}")
    print(
        f"  replica lag ms: {replica['replica_lag_ms']}  at "
        f"{replica['decisions_per_second']} decisions/s"
    )


if __name__ == "__main__":
    main()
