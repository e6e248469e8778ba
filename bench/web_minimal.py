"""B8: the reviewer cycle over HTTP against a minimal Django app doing the same requests.

Both apps serve the same URLs from the same scratch database through the same gunicorn
settings (4 workers), driven by B4's load generator (bench/web.py: log in, Next, then item
page -> decide, which claims the next item and redirects to it) in a closed loop with 16
reviewers. The minimal app (bench/minimal_app/) does the cycle's database work with raw SQL
and nothing else: no authentication, sessions, templates, middleware, audit rows or access
checks. The two alternate three times, medians compared (target: ours >= 0.5x). Each run also
reads the machine's CPU per cycle by where it went (gunicorn, PostgreSQL, the load generator:
bench.common.cpu_used_by_role), which is what sets the rates on two shared cores.

A third side, the framework floor (bench/floor_app/), runs in the same rounds: Review Console's
own settings and middleware (sessions in the database, the user, CSRF, second factor, access
history, django-axes, CSP) around views that do nothing, serving the same URLs. What it reaches
of the minimal app is the most any view of ours could, behind the stack every signed-in page
needs; what ours reaches of it is what our views (the evidence page, the decision and the next
claim, their templates and audit) cost on top.

Then one more run of ours with every gunicorn worker's requests under cProfile
(bench/profile_gunicorn.py) says where a cycle's time in a worker goes (wall time, so waiting
for the database counts where it happens), grouped by where the code lives.

    .venv/bin/python bench/web_minimal.py            # full run (~3 min)
    .venv/bin/python bench/web_minimal.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import os
import pstats
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    ROOT,
    bench_database,
    cpu_reading,
    cpu_used_by_role,
    drop_database,
    load_pending,
    machine,
    peak_rss_mb,
    scratch_database,
    start_web,
    stop_process,
    write_results,
)
from bench.web import PASSWORD, Reviewer, run_phase

DB = "rc_bench_web_minimal"
SIDES = ("ours", "floor", "minimal")

# Where time in a worker goes, by the file and name of each function (first match wins; C
# functions have no file, only a name such as "<built-in method select.select>").
AREAS = [
    ("waiting for requests", ("selectors.py", "select.select", "epoll", "accept")),
    ("database driver (psycopg) and server round trips", ("psycopg",)),
    ("socket I/O to the client", ("socket", "recv", "send")),
    # Django's engine, and Jinja2's with the console's compiled pages (templates/jinja2/).
    ("templates", ("django/template", "templatetags", "jinja2", "markupsafe", "jinja_env")),
    ("middleware and sessions", ("django/contrib/sessions", "middleware", "csp", "axes")),
    ("auth", ("django/contrib/auth",)),
    ("forms", ("django/forms", "queue_app/forms")),
    ("ORM", ("django/db/models",)),
    ("our services, SQL plumbing and evidence", ("queue_app/",)),
    ("request handling, URLs, responses", ("django/core", "django/http", "django/urls")),
    ("gunicorn", ("gunicorn",)),
]


def setup(users: int, stock: int) -> None:
    from django.contrib.auth.models import Group, User

    from queue_app.models import Queue, ReasonCode

    group = Group.objects.create(name="Web reviewers")
    queue = Queue.objects.create(slug="web", name="Web")
    queue.reviewer_groups.add(group)
    ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="OK")
    for i in range(users):
        user = User.objects.create_user(f"web-{i}", password=PASSWORD)
        user.groups.add(group)
    load_pending(
        queue.pk,
        stock,
        prefix="web",
        payload='{"ledger_entity": "ACME-CORP", "variance_amount": 12.50, '
        '"match_decision": "PARTIAL", "currency": "EUR"}',
    )


OURS = "reviewconsole.wsgi"
MINIMAL = "bench.minimal_app.wsgi"
FLOOR = "bench.floor_app.wsgi"


def serve(url: str, workers: int, app: str, log: Path, extra: tuple[str, ...] = ()) -> tuple:
    env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING", "DEBUG": "false"}
    env.update(SECURE_SSL_REDIRECT="false", SECURE_COOKIES="false")
    if app.startswith("bench."):
        # This process's own settings module is in the environment; the bench apps need theirs.
        env["DJANGO_SETTINGS_MODULE"] = app.removesuffix(".wsgi") + ".settings"
    return start_web(env, workers, log, app=app, extra_args=extra)


def measure(
    url: str, workers: int, app: str, users: int, seconds: float, log: Path
) -> tuple[float, dict[str, float]]:
    """Return an app's cycles/s, and the machine's CPU per cycle by where it was spent (ms)."""
    proc, port = serve(url, workers, app, log)
    try:
        reviewers = [Reviewer(port, f"web-{i}") for i in range(users)]
        for r in reviewers:
            r.login()
        before = cpu_reading(proc.pid)
        phase = run_phase(reviewers, seconds, None)
        used = cpu_used_by_role(before, cpu_reading(proc.pid))
    finally:
        stop_process(proc)
    cycles = max(phase["cycles"], 1)
    cpu = {role: round(seconds_used * 1000 / cycles, 2) for role, seconds_used in used.items()}
    return phase["per_second"], cpu


def profile(url: str, workers: int, users: int, seconds: float, log: Path) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="b8-profile-"))
    os.environ["B8_PROFILE_DIR"] = str(folder)
    proc, port = serve(url, workers, OURS, log, ("-c", str(ROOT / "bench/profile_gunicorn.py")))
    try:
        reviewers = [Reviewer(port, f"web-{i}") for i in range(users)]
        for r in reviewers:
            r.login()
        cycles = run_phase(reviewers, seconds, None)["cycles"]
    finally:
        stop_process(proc)
    files = [str(f) for f in folder.glob("*.prof")]
    if not files:
        return {"error": "no profile written"}
    stats = pstats.Stats(*files)
    spent: dict[str, float] = defaultdict(float)
    unplaced: dict[str, float] = defaultdict(float)
    for (filename, _line, function), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():
        where = f"{filename} {function}"
        area = next((name for name, needles in AREAS if any(n in where for n in needles)), "other")
        spent[area] += tottime
        if area == "other":
            unplaced[where.strip()] += tottime
    busy = sum(t for area, t in spent.items() if area != "waiting for requests")
    for f in files:
        os.unlink(f)
    folder.rmdir()
    return {
        "cycles": cycles,
        "worker_ms_per_cycle": round(busy * 1000 / max(cycles, 1), 2),
        "share": {
            area: round(t / busy, 3)
            for area, t in sorted(spent.items(), key=lambda kv: -kv[1])
            if area != "waiting for requests"
        },
        "other_top": {
            where: round(t / busy, 3)
            for where, t in sorted(unplaced.items(), key=lambda kv: -kv[1])[:8]
        },
    }


def sizes(*, smoke: bool, seconds: float) -> tuple[int, float, int, int, int]:
    """B8's reviewers, seconds per run, rounds, stock of items and gunicorn workers."""
    return (2, 1.0, 1, 400, 2) if smoke else (16, seconds, 3, 60_000, 4)


def prepare(base: str, *, smoke: bool, users: int, stock: int) -> tuple[str, str]:
    """Create the scratch database with B8's queue, reviewers and stock; return (name, URL)."""
    db = bench_database(base, smoke=smoke)
    url = scratch_database(db)
    from django.db import connection

    setup(users, stock)
    connection.close()
    return db, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    users, seconds, reps, stock, workers = sizes(smoke=args.smoke, seconds=15.0)
    db, url = prepare(DB, smoke=args.smoke, users=users, stock=stock)
    log = Path(tempfile.mkstemp(prefix="bench-b8-", suffix=".log")[1])
    results = {"machine": machine(), "smoke": args.smoke, "users": users, "seconds": seconds}
    results["gunicorn_workers"] = workers
    try:
        runs = []
        for _ in range(reps):
            run = {}
            for side, app in (("ours", OURS), ("floor", FLOOR), ("minimal", MINIMAL)):
                run[side], run[f"{side}_cpu"] = measure(url, workers, app, users, seconds, log)
                print(f"   {side} {run[side]}/s {run[f'{side}_cpu']}", flush=True)
            runs.append(run)
        for side in SIDES:
            results[side] = statistics.median(r[side] for r in runs)
        results["ratio"] = round(statistics.median(r["ours"] / r["minimal"] for r in runs), 2)
        # The floor's reach, and ours within it (medians of each round's paired ratios).
        results["floor_ratio"] = round(
            statistics.median(r["floor"] / r["minimal"] for r in runs), 2
        )
        results["ours_of_floor"] = round(statistics.median(r["ours"] / r["floor"] for r in runs), 2)
        # The machine's CPU per cycle, by where it went (ms, medians over the runs): on two
        # shared cores this, not any one request's latency, is what sets both apps' rates.
        results["cpu_ms_per_cycle"] = {
            side: {
                role: round(statistics.median(r[f"{side}_cpu"][role] for r in runs), 2)
                for role in runs[0][f"{side}_cpu"]
            }
            for side in SIDES
        }
        results["runs"] = runs
        print(
            f"B8: ours {results['ours']}/s, floor {results['floor']}/s, minimal "
            f"{results['minimal']}/s, ratio {results['ratio']} (floor "
            f"{results['floor_ratio']}, ours of the floor {results['ours_of_floor']})",
            flush=True,
        )
        results["profile"] = profile(url, workers, users, seconds, log)
        print(f"B8 profile of ours: {results['profile']}", flush=True)
    finally:
        log.unlink(missing_ok=True)
        drop_database(db)
    results["peak_rss_mb"] = peak_rss_mb()
    print("wrote", write_results("web_minimal-smoke" if args.smoke else "web_minimal", results))


if __name__ == "__main__":
    main()
