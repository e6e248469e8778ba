"""B5: a bounded soak: reviewers, API clients and the apply worker for N minutes, with faults.

Reviewers drive the console over HTTP through gunicorn (next -> item -> decide), API clients
feed the queue and adjudicate (intake, batch leases, decisions, some releases), and a real
`run_apply_worker` applies every decision through a ledger effect that would show a double.
Every few seconds it samples the RSS of the web and worker processes and the database's
connection count, and injects a fault in turn: the web's idle connections are terminated (the
next request must reconnect by itself), the worker's connection is terminated, a session
locks the head of the queue and idles until the server's idle-in-transaction timeout ends it.
At the end it drains the outbox and counts: decisions lost, applied twice, half-written rows.

    .venv/bin/python bench/soak.py                   # 10 minutes
    .venv/bin/python bench/soak.py --minutes 1 --reviewers 2 --api-clients 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, machine, stop_process, tree_peak_rss_mb, write_results
from bench.load import (
    IDLE_IN_TRANSACTION_MS,
    Traffic,
    count_outcome,
    seed,
    start_gunicorn,
    start_worker,
    wait_for_drain,
)

DB = "rc_bench_soak"


# -- sampling ---------------------------------------------------------------------------------


def rss_mib(pid: int, *, with_children: bool = False) -> float:
    """Current resident memory (VmRSS) of a process, plus its children if asked, in MiB."""
    pids = [pid]
    if with_children:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
        pids += [int(p) for p in out.split()]
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass  # a gunicorn worker recycled between pgrep and the read
    return round(total / 1024, 1)


def thirds(samples: list[float]) -> tuple[float, float]:
    """Median of the first and of the last third of the samples."""
    k = max(1, len(samples) // 3)
    return statistics.median(samples[:k]), statistics.median(samples[-k:])


def flat(samples: list[float], *, ratio: float, slack_mib: float) -> dict[str, Any]:
    """Judge memory flat: the last third's median within ratio (or slack) of the first's."""
    first, last = thirds(samples)
    allowed = max(first * ratio, slack_mib)
    return {
        "first_third_median_mib": first,
        "last_third_median_mib": last,
        "growth_mib": round(last - first, 1),
        "allowed_growth_mib": round(allowed, 1),
        "peak_mib": max(samples),
        "flat": last - first <= allowed,
    }


# -- faults (the soak's own server: connections and locks, never a restart) --------------------


@contextmanager
def admin_cursor(dbname: str) -> Iterator[Any]:
    """An autocommit psycopg cursor on dbname on the app's server."""
    import psycopg

    from bench.common import server_params

    p = server_params()
    with (
        psycopg.connect(
            host=p["host"], port=p["port"] or None, user=p["user"], dbname=dbname, autocommit=True
        ) as conn,
        conn.cursor() as cursor,
    ):
        yield cursor


class Faults:
    """Inject one fault per call, in turn; count what was done and what the server ended."""

    KINDS = ("drop_idle_web_connections", "stuck_transaction", "kill_worker_connection")

    def __init__(self, dbname: str, url: str) -> None:
        self.dbname, self.url = dbname, url
        self.counts: Counter = Counter()
        self.turn = 0
        self.stuck: list[threading.Thread] = []

    def inject(self) -> str:
        kind = self.KINDS[self.turn % len(self.KINDS)]
        self.turn += 1
        getattr(self, kind)()
        self.counts[kind] += 1
        return kind

    def _terminate(self, where: str) -> int:
        with admin_cursor(self.dbname) as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {where}"
            )
            return cursor.fetchone()[0]

    def drop_idle_web_connections(self) -> None:
        # A failover or a pooler restart: web connections die between requests. The next
        # request's health check (CONN_HEALTH_CHECKS) must notice and reconnect, no 5xx. Idle
        # for a second, so not between two statements of a request in flight (that one would
        # get a friendly 503, counted apart).
        self.counts["connections_terminated"] += self._terminate(
            "state = 'idle' AND state_change < now() - interval '1 second' "
            "AND backend_type = 'client backend' "
            "AND application_name NOT IN ('review-console-apply-worker', 'soak-stuck')"
        )

    def kill_worker_connection(self) -> None:
        self.counts["connections_terminated"] += self._terminate(
            "application_name = 'review-console-apply-worker'"
        )

    def stuck_transaction(self) -> None:
        # The app's settings give every connection the idle-in-transaction guard; this session
        # is opened with the same guard and must be ended by the server, not by us.
        import psycopg

        from bench.common import server_params

        p = server_params()
        conn = psycopg.connect(
            host=p["host"],
            port=p["port"] or None,
            user=p["user"],
            dbname=self.dbname,
            application_name="soak-stuck",
            options=f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}",
        )
        # SKIP LOCKED, so it never queues behind a claim in flight: a plain FOR UPDATE that
        # waited on a row a reviewer was claiming would, once the claim commits, keep that
        # (now leased) row locked while skipping it, and the reviewer's next fenced write on
        # it would get the friendly 503 after lock_timeout. That is the designed answer to a
        # lock on your own item (tests/faults/test_stuck_transaction.py), not what this fault
        # is for: claims flowing around locked pending rows.
        rows = conn.execute(
            "SELECT id FROM queue_app_reviewitem WHERE state = 'pending' "
            "ORDER BY priority DESC, created_at LIMIT 3 FOR UPDATE SKIP LOCKED"
        ).fetchall()
        self.counts["rows_locked_by_stuck_sessions"] += len(rows)

        def linger() -> None:
            time.sleep(IDLE_IN_TRANSACTION_MS / 1000 * 3)
            try:
                conn.execute("SELECT 1")
                self.counts["stuck_sessions_not_ended"] += 1
            except psycopg.Error:  # IdleInTransactionSessionTimeout, as the server ends it
                self.counts["stuck_sessions_ended_by_server"] += 1
            finally:
                conn.close()

        thread = threading.Thread(target=linger, daemon=True)
        self.stuck.append(thread)
        thread.start()

    def settle(self) -> None:
        for thread in self.stuck:
            thread.join(timeout=60)


# -- the run ----------------------------------------------------------------------------------


def soak(
    *,
    minutes: float,
    reviewers: int,
    api_clients: int,
    gunicorn_workers: int,
    stock: int,
    sample_every: float,
    fault_every: float,
    think: float,
    logs: Path,
) -> dict[str, Any]:
    """Run the soak on a scratch database and return its figures."""
    from bench.common import scratch_database

    url = scratch_database(DB)
    from django.db import connection

    seeded = seed(reviewers=reviewers, api_clients=api_clients, stock=stock)
    connection.close()
    logs.mkdir(parents=True, exist_ok=True)
    web, port = start_gunicorn(url, gunicorn_workers, logs / "soak-web.log")
    worker = start_worker(url, logs / "soak-worker.log")
    traffic = Traffic(port, seeded["users"], seeded["tokens"], think)
    faults = Faults(DB, url)
    samples: dict[str, list[float]] = {"web_rss_mib": [], "worker_rss_mib": [], "connections": []}
    started = time.monotonic()
    try:
        traffic.start()
        # Let imports, template caches and connection pools settle before the first sample.
        warmup = min(30.0, max(5.0, minutes * 60 * 0.05))
        time.sleep(warmup)
        end = time.monotonic() + minutes * 60 - warmup
        next_fault = time.monotonic() + fault_every
        while time.monotonic() < end:
            samples["web_rss_mib"].append(rss_mib(web.pid, with_children=True))
            samples["worker_rss_mib"].append(rss_mib(worker.pid))
            with admin_cursor(DB) as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND application_name <> 'soak-stuck'"
                )
                samples["connections"].append(cursor.fetchone()[0])
            if fault_every and time.monotonic() >= next_fault:
                faults.inject()
                next_fault += fault_every
            time.sleep(sample_every)
    finally:
        traffic.stop()
        faults.settle()
        drained = wait_for_drain(lambda: admin_cursor(DB), timeout=180)
        # VmHWM: the true peak, including any spike between two samples.
        high_water = {"web": tree_peak_rss_mb(web.pid), "worker": tree_peak_rss_mb(worker.pid)}
        worker_status = stop_process(worker)
        stop_process(web)
    elapsed = time.monotonic() - started
    with admin_cursor(DB) as cursor:
        outcome = count_outcome(cursor, traffic.tally)
    counts = traffic.tally.counts
    connection_first, connection_last = thirds(samples["connections"])
    # Each gunicorn worker holds one persistent connection, the apply worker two (its Django
    # connection and its LISTEN connection); one more for a terminated backend on its way out.
    connection_bound = gunicorn_workers + 3
    return {
        "machine": machine(),
        "minutes": minutes,
        "elapsed_seconds": round(elapsed, 1),
        "reviewers": reviewers,
        "api_clients": api_clients,
        "gunicorn_workers": gunicorn_workers,
        "claims": counts["claims"],
        "decisions": outcome["decisions"],
        "console_decisions": counts["console_decisions"],
        "api_decisions": counts["api_decisions"],
        "intake": counts["intake"],
        "faults_injected": sum(faults.counts[k] for k in Faults.KINDS),
        "faults": dict(faults.counts),
        "responses_5xx": counts["5xx"],
        "responses_503_friendly": counts["friendly_503"],
        "responses_server_error": counts["server_error"],
        "transport_errors": counts["transport_errors"],
        "bad_samples": traffic.tally.bad_samples,
        "decisions_lost": outcome["decisions_lost"],
        "decisions_applied_twice": outcome["decisions_applied_twice"],
        "outcome": outcome,
        "outbox_drained": drained,
        "worker_exit_status": worker_status,
        "memory": {
            "web": flat(samples["web_rss_mib"], ratio=0.10, slack_mib=8),
            "worker": flat(samples["worker_rss_mib"], ratio=0.10, slack_mib=8),
        },
        "peak_memory_mib": high_water,
        "connections": {
            "first_third_median": connection_first,
            "last_third_median": connection_last,
            "max": max(samples["connections"]),
            "bound": connection_bound,
            "stable": max(samples["connections"]) <= connection_bound
            and connection_last <= connection_first + 1,
        },
        "samples": samples,
        "other_counts": {k: v for k, v in counts.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--reviewers", type=int, default=4)
    parser.add_argument("--api-clients", type=int, default=2)
    parser.add_argument("--gunicorn-workers", type=int, default=2)
    parser.add_argument("--stock", type=int, default=5000, help="items seeded before the start")
    parser.add_argument("--sample-every", type=float, default=3.0, help="seconds")
    parser.add_argument("--fault-every", type=float, default=20.0, help="seconds; 0 disables")
    parser.add_argument("--think", type=float, default=0.05, help="seconds between steps")
    parser.add_argument("--results", default="", help="results file name (default soak[-N])")
    args = parser.parse_args()
    if not 0 < args.minutes <= 60:
        parser.error("--minutes must be more than 0 and at most 60")
    figures = soak(
        minutes=args.minutes,
        reviewers=args.reviewers,
        api_clients=args.api_clients,
        gunicorn_workers=args.gunicorn_workers,
        stock=args.stock,
        sample_every=args.sample_every,
        fault_every=args.fault_every,
        think=args.think,
        logs=ROOT / "var" / "soak-logs",
    )
    name = args.results or ("soak" if args.minutes >= 10 else f"soak-{args.minutes:g}min")
    path = write_results(name, figures)
    summary = {
        k: figures[k]
        for k in (
            "claims",
            "decisions",
            "faults_injected",
            "responses_5xx",
            "responses_503_friendly",
            "decisions_lost",
            "decisions_applied_twice",
            "peak_memory_mib",
        )
    }
    summary["memory_flat"] = {k: v["flat"] for k, v in figures["memory"].items()}
    summary["connections_stable"] = figures["connections"]["stable"]
    print(json.dumps(summary, indent=2))
    print("wrote", path)


if __name__ == "__main__":
    main()
