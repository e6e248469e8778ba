"""What Python's cycle collector costs a reviewer cycle: the interpreter's settings, the app's.

The app's long-running processes freeze what they loaded at start-up and collect young objects
every 20,000 allocations instead of 700 (reviewconsole/gc_tuning.py). This measures what that
saves, in one process against one scratch database, on two cycles:
- console: B8's reviewer cycle through Django's test client (the item page, then the decide
  that opens the next item), on B8's data (bench/web_minimal.setup);
- services: B3's cycle (claim_next + submit_decision, bench.common.review_next).
Each runs in rounds that alternate the two settings, "python" (700 / 10 / 10, nothing frozen:
every object the process holds is in the oldest generation, as in a worker that never froze)
and "app" (reviewconsole/gc_tuning.tune). A round reads the process's CPU a cycle, the
collector's own CPU a cycle (gc.callbacks) and the collections of each generation.

    .venv/bin/python bench/gc_share.py            # 4 rounds of 300 cycles per setting
    .venv/bin/python bench/gc_share.py --smoke

The collector's CPU is its own and barely moves with the machine's load; the CPU a cycle is
the whole process's (the test client included) and moves with it, so read it round by round.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# Through the test client, plain http: without DEBUG the settings would redirect to https.
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
# Production settings (DEBUG off) refuse to start without a key: a throwaway one for the bench.
os.environ.setdefault("SECRET_KEY", "bench-only-key-not-a-secret-0123456789-abcdefghijklmnop")

from bench.common import (
    bench_database,
    drop_database,
    machine,
    review_next,
    scratch_database,
    write_results,
)

DB = "rc_bench_gc_share"
PYTHON_THRESHOLDS = (700, 10, 10)


class CollectorClock:
    """The CPU the cycle collector takes, and its collections by generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.seconds += time.thread_time() - self._started
            self.collections[info["generation"]] += 1


def use_settings(name: str) -> None:
    """Put the collector as the interpreter starts it, or as the app's processes run it."""
    from reviewconsole import gc_tuning

    if name == "python":
        gc.unfreeze()
        gc.set_threshold(*PYTHON_THRESHOLDS)
    else:
        gc_tuning.tune()


class ConsoleCycle:
    """B8's requests through the test client: GET the item page, POST its decision."""

    def __init__(self, username: str, password: str) -> None:
        from django.test import Client

        self.client = Client()
        if (
            self.client.post(
                "/accounts/login/", {"username": username, "password": password}
            ).status_code
            != 302
        ):
            raise RuntimeError("the bench reviewer could not sign in")
        self.path = self._item_path(self.client.post("/queues/web/next/", {}))

    @staticmethod
    def _item_path(response: Any) -> str:
        match = re.search(r"/items/\d+/", response.get("Location", ""))
        if response.status_code != 302 or match is None:
            raise RuntimeError("no item was opened (is the stock large enough?)")
        return match.group(0)

    def __call__(self) -> None:
        from bench.web import decision_fields

        fields = decision_fields(self.client.get(self.path).content.decode())
        if "lease_token" not in fields or "evidence_hash" not in fields:
            raise RuntimeError("item page without a decision form")
        decided = self.client.post(
            self.path + "decide/",
            {**fields, "verdict": "approve", "reason_code": "ok", "note": ""},
        )
        self.path = self._item_path(decided)


def measure(cycle: Any, settings_name: str, cycles: int) -> dict[str, Any]:
    use_settings(settings_name)
    clock = CollectorClock()
    gc.callbacks.append(clock)
    try:
        started = time.process_time()
        for _ in range(cycles):
            cycle()
        cpu = time.process_time() - started
    finally:
        gc.callbacks.remove(clock)
    return {
        "cpu_ms_per_cycle": round(cpu * 1000 / cycles, 3),
        "collector_ms_per_cycle": round(clock.seconds * 1000 / cycles, 3),
        "collections": clock.collections,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=300)
    args = parser.parse_args()
    rounds, cycles = (1, 20) if args.smoke else (args.rounds, args.cycles)
    warmup = 30

    db = bench_database(DB, smoke=args.smoke)
    scratch_database(db)
    try:
        from django.contrib.auth.models import User

        from bench.web_minimal import PASSWORD, setup
        from queue_app.models import Queue

        # Every cycle of both kinds takes one item: enough for them all and the warm-ups.
        setup(users=1, stock=2 * (warmup + 2 * rounds * cycles) + 50)
        queue, reviewer = Queue.objects.get(slug="web"), User.objects.get(username="web-0")
        kinds = {
            "console": ConsoleCycle("web-0", PASSWORD),
            "services": lambda: review_next(queue, reviewer) or _empty(),
        }
        results: dict[str, Any] = {}
        for kind, cycle in kinds.items():
            for _ in range(warmup):
                cycle()
            runs: dict[str, list[dict[str, Any]]] = {"python": [], "app": []}
            for round_no in range(rounds):
                # Each round starts with the other setting than the last one did.
                order = ("python", "app") if round_no % 2 == 0 else ("app", "python")
                for name in order:
                    runs[name].append(measure(cycle, name, cycles))
                    print(f"{kind} {name}: {runs[name][-1]}", flush=True)
            results[kind] = {
                name: {
                    "cpu_ms_per_cycle": statistics.median(r["cpu_ms_per_cycle"] for r in rs),
                    "collector_ms_per_cycle": statistics.median(
                        r["collector_ms_per_cycle"] for r in rs
                    ),
                    "runs": rs,
                }
                for name, rs in runs.items()
            }
        print()
        print(
            "| cycle | settings | CPU a cycle, ms | the collector's, ms | collections (gen 0/1/2) |"
        )
        print("|---|---|---:|---:|---|")
        for kind, by_setting in results.items():
            for name, r in by_setting.items():
                counts = [sum(run["collections"][g] for run in r["runs"]) for g in range(3)]
                print(
                    f"| {kind} | {name} | {r['cpu_ms_per_cycle']:.2f} | "
                    f"{r['collector_ms_per_cycle']:.3f} | {' / '.join(map(str, counts))} |"
                )
        path = write_results(
            "gc_share-smoke" if args.smoke else "gc_share",
            {
                "machine": machine(),
                "rounds": rounds,
                "cycles_per_round": cycles,
                "results": results,
                "smoke": args.smoke,
            },
        )
        print(f"wrote {path}")
    finally:
        use_settings("python")
        drop_database(db)


def _empty() -> None:
    raise RuntimeError("the services cycle found no item (is the stock large enough?)")


if __name__ == "__main__":
    main()
