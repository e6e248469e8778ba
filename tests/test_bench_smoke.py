"""The benchmark scripts keep working: each runs in smoke mode (tiny sizes, seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What each scenario must have measured, beyond the machine description: a figure per level
# and the peak memory of the processes it ran.
EXPECTED = {
    "claims.py": lambda r: r["b1"]["levels"] and r["b2"]["levels"] and r["peak_rss_mb"] > 0,
    # Every variant was claimed and timed (a smoke run's few claims may read 0 ticks of CPU).
    "claim_variants.py": lambda r: (
        set(r["server_cpu_ms"]) == {"current", "gate per set", "no access probes"}
        and all(ms >= 0 for ms in r["server_cpu_ms"].values())
    ),
    "cycle.py": lambda r: (
        all(
            level["services"]["per_second"] > 0
            and level["pgbench"]["per_second"] > 0
            and level["floor"]["per_second"] > 0
            for level in r["levels"].values()
        )
        and r["peak_rss_mb"] > 0
    ),
    # Every side ran at every level, and each side's clients and server used CPU.
    "cycle_bound.py": lambda r: all(
        level[side]["per_second"] > 0
        and level[side]["client_cpu_ms"] > 0
        and level[side]["server_cpu_ms"] > 0
        for level in r["levels"].values()
        for side in ("services", "floor", "pgbench", "functions floor", "functions pgbench")
    ),
    "decisions.py": lambda r: (
        len(r["flush_levels"]) == 2
        and all(
            s["global_lock"] > 0 and s["sealed"] > 0
            for level in r["flush_levels"]
            for s in level["scenarios"].values()
        )
        and all(level["pgbench_commits_per_second"] > 0 for level in r["flush_levels"])
        # The added flush time took effect: the server commits more slowly with it.
        and r["flush_levels"][1]["pgbench_commits_per_second"]
        < r["flush_levels"][0]["pgbench_commits_per_second"]
        and r["all_sealed"]
    ),
    # Both cycles ran under both collector settings, and the console's ran fewer young
    # collections with the app's (the services' few allocations may fill none in a smoke run).
    "gc_share.py": lambda r: (
        all(
            r["results"][kind][name]["cpu_ms_per_cycle"] > 0
            for kind in ("console", "services")
            for name in ("python", "app")
        )
        and r["results"]["console"]["app"]["runs"][0]["collections"][0]
        < r["results"]["console"]["python"]["runs"][0]["collections"][0]
    ),
    "web_minimal.py": lambda r: (
        r["ours"] > 0
        and r["minimal"] > 0
        # The floor's pages are behind the sign-in: cycles there mean its reviewers signed in.
        and r["floor"] > 0
        and r["profile"]["cycles"] > 0
        # Both apps' CPU per cycle was read, in the web server and in PostgreSQL.
        and all(
            r["cpu_ms_per_cycle"][side][role] > 0
            for side in ("ours", "minimal")
            for role in ("web", "postgres")
        )
        and r["cpu_ms_per_cycle"]["floor"]["web"] > 0
    ),
    "web_versions.py": lambda r: (
        r["versions"]["HEAD"]["per_second"] > 0
        and len(r["versions"]["HEAD"]["commit"]) == 40
        and r["versions"]["HEAD"]["cpu_ms_per_cycle"]["web"] > 0
        and r["versions"]["minimal app"]["per_second"] > 0
    ),
    "web.py": lambda r: (
        r["max"]["cycles"] > 0
        and r["at_90pct"]["pages"]["decide"]["n"] > 0
        and r["web_peak_rss_mb"] > 0
    ),
    "apply.py": lambda r: (
        all(rate > 0 for rate in r["summary"]["applied_per_second"].values())
        and r["summary"]["lag_p99_ms"]["notify"] > 0
        and r["summary"]["worker_peak_rss_mb"] > 0
    ),
    "peer.py": lambda r: (
        all(
            level["ours_per_second"] > 0
            and level["peer_per_second"] > 0
            and level["floor_per_second"] > 0
            for level in r["levels"].values()
        )
        and r["peak_rss_mb"] > 0
    ),
    # Every level was timed, and one check cycle's statements were counted: the Confirm
    # passes its task's queue, so no statement looks the task's queue up by id.
    "next_check.py": lambda r: (
        all(level["service"]["p50"] > 0 for level in r["b9"]["levels"].values())
        and r["b9"]["statements_per_check_cycle"]["confirm"] > 0
        and not any(
            "queue_id" in name for name in r["b9"]["statements_per_check_cycle"]["statements"]
        )
    ),
    # Every side of the pooler comparison was timed (PgBouncer's through a real one), and the
    # replica was sampled while decisions streamed to it.
    "pooler.py": lambda r: (
        all(side["p50"] > 0 for side in r["pooler"]["cycle_ms"].values())
        and r["pooler"]["ratio_pooled_vs_direct_unprepared"] > 0
        and r["replica"]["decisions"] > 0
        and r["replica"]["samples"] > 0
    ),
    # The generator wrote every kind of row, sealed the chain and measured the database.
    "history.py": lambda r: (
        all(r["counts"][k] > 0 for k in ("items", "decisions", "item_events", "lane_tasks"))
        and r["counts"]["chain_batches"] > 0
        and r["size_bytes"] > 0
    ),
    "profile_cycle.py": lambda r: (
        r["statements_per_cycle"] > 0 and r["floor_client_cpu_ms_per_cycle"] > 0
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_bench_script_runs_in_smoke_mode(script):
    results = _smoke_run(script, f"{script.removesuffix('.py')}-smoke.json")
    assert results["smoke"] is True
    assert results["machine"]["postgresql"]
    assert EXPECTED[script](results), results


@pytest.mark.slow
def test_b10_times_every_route_with_the_chain_verified_in_a_run_of_its_own():
    """B10 at ten million decisions verifies the chain for half an hour: --verify-only runs that
    alone, and the routes' run (--no-verify) reports those figures with their date."""
    verified = _smoke_run("b10.py", "b10-verify-smoke.json", "--verify-only")
    assert verified["smoke"] is True
    assert all(side["rows"] > 0 for side in verified["verify"].values()), verified
    b10 = _smoke_run("b10.py", "b10-smoke.json", "--no-verify")
    assert b10["verify"] == verified["verify"]
    assert b10["verify_run"] == verified["machine"]["date"]
    routes = {r["route"]: r for r in b10["routes"]}
    for route in ("home /", "Next item", "My work", "/metrics", "API decide", "checkpoint"):
        assert routes[route]["samples"] >= 2 and routes[route]["ratio_p50"] > 0, route
    assert b10["export"]["large"]["rows"] > 0


def test_settle_waits_for_autovacuum_then_checkpoints():
    """run_all's pause between scenarios: it reads the server's autovacuum workers and returns
    within its timeout."""
    sys.path.insert(0, str(ROOT))
    from bench.settle import settle

    waited, running = settle(timeout=3)
    assert 0 <= waited < 30
    assert running >= 0
    # Nothing to wait for is answered at once.
    if running == 0:
        assert waited < 3


def test_cpu_is_counted_process_by_process_between_two_readings():
    sys.path.insert(0, str(ROOT))
    from bench.common import cpu_reading, cpu_used_by_role

    before = {
        1: ("postgres", 428.0),  # long-lived, counted elsewhere at the second reading
        2: ("web", 10.0),
        3: ("postgres", 5.0),  # ends between the readings
        4: ("other", 7.0),  # its pid is reused by a new process
    }
    after = {
        1: ("other", 428.5),
        2: ("web", 12.0),
        4: ("other", 0.25),
        5: ("postgres", 1.5),  # starts between the readings
    }
    assert cpu_used_by_role(before, after) == {
        "web": 2.0,
        "postgres": 1.5,
        "load": 0.0,
        "other": 0.75,
    }
    # Real readings of this machine: every role present, nothing negative.
    first = cpu_reading(os.getpid())
    sum(range(10_000_000))  # CPU this process uses: several clock ticks anywhere
    used = cpu_used_by_role(first, cpu_reading(os.getpid()))
    assert used["load"] > 0
    assert all(seconds >= 0 for seconds in used.values())


def _smoke_run(script: str, result_name: str, *args: str) -> dict:
    """Run a bench script with --smoke (and args); return the results file it wrote."""
    written = ROOT / "bench" / "results" / result_name
    written.unlink(missing_ok=True)  # a file left by an earlier run must not pass for this one
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--smoke", *args],
        cwd=ROOT,
        env={**os.environ, "LOG_LEVEL": "WARNING"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(written.read_text())


def test_the_load_generator_posts_the_decision_forms_own_inputs():
    from bench.web import decision_fields

    ours = (
        '<form id="logout-form"><input type="hidden" name="csrfmiddlewaretoken" value="a"></form>'
        '<form id="decision-form" method="post"><input type="hidden" name="lease_token" value="t">'
        '<input type="hidden" name="evidence_hash" value="h">'
        '<input type="hidden" name="queue" value="7">'
        '<input type="radio" name="verdict" value="approve"></form>'
        '<form id="hold-form"><input type="hidden" name="lease_token" value="other"></form>'
    )
    assert decision_fields(ours) == {"lease_token": "t", "evidence_hash": "h", "queue": "7"}
    minimal = (
        '<form method="post"><input name="lease_token" value="t">'
        '<input name="evidence_hash" value="h"></form>'
    )
    assert decision_fields(minimal) == {"lease_token": "t", "evidence_hash": "h"}
