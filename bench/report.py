"""Write bench/RESULTS.md from the JSON files the scenario scripts left in bench/results/."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
OUT = Path(__file__).resolve().parent / "RESULTS.md"


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def main() -> None:
    lines = ["# Benchmark results", ""]
    machine = next(
        (r["machine"] for n in ("claims", "cycle", "apply", "web", "peer") if (r := load(n))), None
    )
    if machine:
        lines += [
            f"Run of {machine['date']} on {machine['cores']} cores, {machine['memory']} "
            f"memory, PostgreSQL {machine['postgresql']}, Python {machine['python']}.",
            "Reproduce: `bench/run_all` (each scenario alone: the command in its section).",
            "Ratios are measured side by side in one process or the same minute; absolute "
            "times are context only.",
            "",
        ]
    if claims := load("claims"):
        lines += [
            "## B1 claim latency vs live leases (`bench/claims.py --only b1`)",
            "",
            f"{claims['b1']['pending']:,} pending items; each claim rolled back.",
            "",
            "| live leases | claim_next p50 / p99 ms | CLAIM_ITEMS p50 / p99 ms | "
            "reference p50 / p99 ms |",
            "|---:|---:|---:|---:|",
        ]
        for level, r in claims["b1"]["levels"].items():
            lines.append(
                f"| {int(level):,} | {r['service']['p50']:.3f} / {r['service']['p99']:.3f}"
                f" | {r['statement']['p50']:.3f} / {r['statement']['p99']:.3f} | "
                f"{r['reference']['p50']:.3f} / {r['reference']['p99']:.3f} |"
            )
        ratio = claims["b1"]["ratio_p50_max_vs_none"]
        lines += [
            "",
            f"p50 at the most leases vs none: claim_next {ratio['service']}x, "
            f"reference {ratio['reference']}x — target ≤ 1.3x: "
            f"{verdict(ratio['service'] <= 1.3)}.",
            "",
        ]
        if "b2" in claims:
            lines += [
                "## B2 claim latency vs decided history (`bench/claims.py --only b2`)",
                "",
                "| decided items | claim_next p50 / p99 ms | CLAIM_ITEMS p50 / p99 ms |",
                "|---:|---:|---:|",
            ]
            for level, r in claims["b2"]["levels"].items():
                lines.append(
                    f"| {int(level):,} | {r['service']['p50']:.3f} / "
                    f"{r['service']['p99']:.3f} | {r['statement']['p50']:.3f} / "
                    f"{r['statement']['p99']:.3f} |"
                )
            ratio = claims["b2"]["ratio_p50_max_vs_none"]
            lines += [
                "",
                f"p50 at the most history vs none: {ratio['service']}x — target ≤ 1.3x: "
                f"{verdict(ratio['service'] <= 1.3)}.",
                "",
            ]
    if cycle := load("cycle"):
        lines += [
            "## B3 claim + decide cycles/s vs pgbench (`bench/cycle.py`)",
            "",
            "| processes | services /s | pgbench /s (same statements) | ratio | "
            "peak RSS per process MiB |",
            "|---:|---:|---:|---:|---:|",
        ]
        for level, r in cycle["levels"].items():
            lines.append(
                f"| {level} | {r['services']['per_second']} | {r['pgbench']['per_second']}"
                f" | {r['ratio']} | {r['services']['peak_rss_mb_per_process']} |"
            )
        worst = min(r["ratio"] for k, r in cycle["levels"].items() if k != "1")
        lines += ["", f"Target ≥ 0.6 at 8 and 32 processes: {verdict(worst >= 0.6)}.", ""]
    if web := load("web"):
        lines += [
            "## B4 reviewer cycle over HTTP through gunicorn (`bench/web.py`)",
            "",
            f"{web['users']} reviewers, {web['gunicorn_workers']} gunicorn workers; "
            f"maximum {web['max']['per_second']} cycles/s; web peak RSS "
            f"{web.get('web_peak_rss_mb')} MiB (all workers).",
            "",
            "| load | cycles/s | next p50/p99 ms | item page p50/p99 ms | decide p50/p99 ms |",
            "|---|---:|---:|---:|---:|",
        ]
        for key in ("at_50pct", "at_90pct"):
            r = web[key]
            pages = r["pages"]
            lines.append(
                f"| {key[3:5]}% | {r['per_second']} | "
                + " | ".join(
                    f"{pages[p]['p50']:.1f} / {pages[p]['p99']:.1f}"
                    for p in ("next", "item", "decide")
                )
                + " |"
            )
        lines.append("")
    if apply := load("apply"):
        lines += [
            "## B5 apply worker (`bench/apply.py`)",
            "",
            "```",
            json.dumps(apply.get("summary", apply), indent=2),
            "```",
            "",
        ]
    if peer := load("peer"):
        lines += [
            "## B6 peer: procrastinate (`bench/peer.py`)",
            "",
            "| processes | ours /s | procrastinate /s | ratio | procrastinate defer /s |",
            "|---:|---:|---:|---:|---:|",
        ]
        for level, r in peer["levels"].items():
            lines.append(
                f"| {level} | {r['ours_per_second']} | {r['peer_per_second']} | "
                f"{r['ratio']} | {r['peer_defer_per_second']} |"
            )
        worst = min(r["ratio"] for r in peer["levels"].values())
        lines += ["", f"Target ≥ 1.0 at every count: {verdict(worst >= 1.0)}.", ""]
    notes = Path(__file__).resolve().parent / "NOTES.md"
    if notes.exists():
        lines += [notes.read_text()]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
