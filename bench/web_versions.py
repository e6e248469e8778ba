"""B8 across commits: the HTTP reviewer cycle of several versions of the app, side by side.

What a change to the request path bought, measured in one run: each --rev is checked out into a
temporary git worktree and served in turn by gunicorn under B8's settings (bench/web_minimal.py:
4 workers, 16 reviewers, B4's load generator) from one scratch database, with the minimal app
last in every round; the versions alternate, each round starting one version further along
(with two, A B then B A), so that no version always runs first or right after the minimal app;
and each run also reads the machine's CPU per
cycle by where it went (bench.common.cpu_used_by_role). Every version runs with this
checkout's virtualenv, so it suits commits whose dependencies and migrations match this one's.

    .venv/bin/python bench/web_versions.py --rev 14297f8 --rev HEAD      # ~2 min per round
    .venv/bin/python bench/web_versions.py --smoke                       # HEAD only, tiny, for CI

Prints a table; writes bench/results/<--name>.json (default web_versions; web_versions-smoke.json
for --smoke). --rounds sets how many rounds (default 3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.common as common
from bench.common import (
    ROOT,
    drop_database,
    machine,
    write_results,
)
from bench.web_minimal import MINIMAL as MINIMAL_APP
from bench.web_minimal import OURS, measure, prepare, sizes

DB = "rc_bench_web_versions"
MINIMAL = "minimal app"


def checkout(rev: str, into: Path) -> str:
    """Check rev out into a detached worktree at into; return its full commit id."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(into), commit],
        cwd=ROOT,
        check=True,
    )
    return commit


def remove(tree: Path) -> None:
    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)


def serve_from(tree: Path) -> None:
    """Make the next gunicorn run the code of this tree (its cwd and first import path)."""
    common.ROOT = tree
    os.environ["PYTHONPATH"] = str(tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", action="append", help="a commit (repeatable; default HEAD)")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--rounds", type=int, help="rounds of every version (default 3)")
    parser.add_argument("--name", default="web_versions", help="the results file's name")
    args = parser.parse_args()
    args.rev = args.rev or ["HEAD"]
    users, seconds, reps, stock, workers = sizes(smoke=args.smoke, seconds=10.0)
    reps = args.rounds or reps
    db, url = prepare(DB, smoke=args.smoke, users=users, stock=stock)
    log = Path(tempfile.mkstemp(prefix="bench-versions-", suffix=".log")[1])
    folder = Path(tempfile.mkdtemp(prefix="bench-versions-"))
    trees: dict[str, Path] = {}
    commits: dict[str, str] = {}
    results = {
        "machine": machine(),
        "smoke": args.smoke,
        "users": users,
        "seconds": seconds,
        "rounds": reps,
    }
    try:
        for i, rev in enumerate(args.rev):
            tree = folder / f"v{i}"
            commits[rev] = checkout(rev, tree)
            trees[rev] = tree
        runs: dict[str, list[tuple[float, dict[str, float]]]] = {
            name: [] for name in [*args.rev, MINIMAL]
        }
        for turn in range(reps):
            first = turn % len(args.rev)
            for name in [*args.rev[first:], *args.rev[:first], MINIMAL]:
                tree = ROOT if name == MINIMAL else trees[name]
                serve_from(tree)
                app = MINIMAL_APP if name == MINIMAL else OURS
                rate, cpu = measure(url, workers, app, users, seconds, log)
                runs[name].append((rate, cpu))
                print(f"   {name}: {rate}/s {cpu}", flush=True)
        minimal_rates = [rate for rate, _ in runs[MINIMAL]]
        results["versions"] = {
            name: {
                "commit": commits.get(name, ""),
                "per_second": round(statistics.median(rate for rate, _ in runs[name]), 2),
                "ratio_to_minimal": [
                    round(rate / m, 3)
                    for (rate, _), m in zip(runs[name], minimal_rates, strict=True)
                ],
                "cpu_ms_per_cycle": {
                    role: round(statistics.median(cpu[role] for _, cpu in runs[name]), 2)
                    for role in runs[name][0][1]
                },
            }
            for name in runs
        }
    finally:
        serve_from(ROOT)
        for tree in trees.values():
            remove(tree)
        log.unlink(missing_ok=True)
        drop_database(db)
    print("| version | cycles/s | ratio to minimal (each run) | gunicorn ms | PostgreSQL ms |")
    for name, v in results["versions"].items():
        cpu = v["cpu_ms_per_cycle"]
        print(
            f"| {name} | {v['per_second']} | "
            + " / ".join(f"{r:.2f}" for r in v["ratio_to_minimal"])
            + f" | {cpu['web']} | {cpu['postgres']} |"
        )
    print("wrote", write_results("web_versions-smoke" if args.smoke else args.name, results))


if __name__ == "__main__":
    main()
