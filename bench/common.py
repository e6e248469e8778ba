"""Shared plumbing for the benchmark scripts: a scratch database, timing, results files.

Every script measures its candidate and its baseline side by side in one process and reports
ratios; absolute times are context only (these machines are shared and noisy).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import multiprocessing as mp
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))
# Production settings (DEBUG off) refuse to start without a key: a throwaway one for the bench,
# inherited by every server and worker process it starts.
os.environ.setdefault("SECRET_KEY", "bench-only-key-not-a-secret-0123456789-abcdefghijklmnop")


def server_params() -> dict[str, str]:
    """Return host/user of the server the app uses (DATABASE_URL, else the embedded one)."""
    url = os.environ.get("DATABASE_URL", "")
    if url:
        import environ

        cfg = environ.Env.db_url_config(url)
        host = cfg.get("HOST") or cfg.get("OPTIONS", {}).get("host", "")
        return {"host": host, "port": str(cfg.get("PORT") or ""), "user": cfg.get("USER") or ""}
    from reviewconsole.embedded_pg import ensure_embedded_database

    params = ensure_embedded_database(ROOT / "var")
    return {"host": params["HOST"], "port": "", "user": params["USER"]}


def database_url(dbname: str) -> str:
    """Return a DATABASE_URL for dbname on the app's server."""
    p = server_params()
    if p["host"].startswith("/"):
        return f"postgres://{p['user']}@/{dbname}?host={quote(p['host'])}"
    port = f":{p['port']}" if p["port"] else ""
    return f"postgres://{p['user']}@{p['host']}{port}/{dbname}"


def _migrations_fingerprint() -> str:
    """Return a short hash of every project migration and the Django version."""
    import django

    digest = hashlib.sha256(django.get_version().encode())
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def admin_connection() -> Any:
    import psycopg

    p = server_params()
    return psycopg.connect(
        host=p["host"], port=p["port"] or None, user=p["user"], dbname="postgres", autocommit=True
    )


def _migrated_template() -> str:
    """Return the name of a migrated template database, building it once per migration set."""
    # Migrating takes ~10 s on a busy 2-core machine; cloning a template takes a fraction of a
    # second, which keeps the smoke runs in the test suite to seconds.
    name = f"rc_bench_template_{_migrations_fingerprint()}"
    with admin_connection() as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            return name
        building = f"{name}_{os.getpid()}"
        conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{building}"')
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url(building), "LOG_LEVEL": "WARNING"},
        check=True,
    )
    with admin_connection() as conn:
        try:
            conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
        except psycopg_errors().DuplicateDatabase:
            # Another run built the same template meanwhile; theirs is as good as ours.
            conn.execute(f'DROP DATABASE "{building}"')
        # Older templates (earlier migration sets) only take up space.
        stale = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'rc_bench_template_%%' "
            "AND datname <> %s AND datname NOT LIKE %s",
            [name, f"{name}_%"],
        ).fetchall()
        for (old,) in stale:
            with contextlib.suppress(Exception):
                conn.execute(f'DROP DATABASE "{old}"')
    return name


def psycopg_errors() -> Any:
    """Return psycopg.errors (imported late: bench scripts set up Django first)."""
    import psycopg.errors

    return psycopg.errors


def bench_database(base: str, *, smoke: bool) -> str:
    """Return a scenario's scratch database name; a smoke run never touches a full run's.

    BENCH_DB_SUFFIX keeps runs from several worktrees on one server apart (e.g. "_clocks").
    """
    name = f"{base}_smoke" if smoke else base
    return name + os.environ.get("BENCH_DB_SUFFIX", "")


def scratch_database(dbname: str, *, fresh: bool = True) -> str:
    """Create (or recreate) dbname as a migrated copy, point Django at it; return its URL."""
    template = _migrated_template()
    with admin_connection() as conn:
        if fresh:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{dbname}" TEMPLATE "{template}"')
    url = database_url(dbname)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    if exists:
        from django.core.management import call_command

        # A kept database (fresh=False) may predate the newest migration.
        call_command("migrate", verbosity=0)
    return url


def drop_database(dbname: str) -> None:
    """Drop a scratch database (closing Django's connections to it first)."""
    from django.db import connections

    connections.close_all()
    with admin_connection() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    """Return p50/p90/p99/mean of a list of milliseconds."""
    ordered = sorted(samples_ms)
    q = (
        statistics.quantiles(ordered, n=100, method="inclusive")
        if len(ordered) > 1
        else ordered * 99
    )
    return {
        "p50": round(q[49], 4),
        "p90": round(q[89], 4),
        "p99": round(q[98], 4),
        "mean": round(statistics.fmean(ordered), 4),
        "n": len(ordered),
    }


def time_calls(fn: Callable[[], Any], n: int, *, warmup: int = 20) -> list[float]:
    """Call fn n times after a warm-up; return each call's wall time in milliseconds."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def peak_rss_mb() -> float:
    """Return this process's peak resident memory in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def process_peak_rss_mb(pid: int) -> float:
    """Return another live process's peak resident memory (VmHWM) in MiB, 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def tree_peak_rss_mb(pid: int) -> float:
    """Return the sum of peak RSS over a live process and its children (gunicorn's workers)."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return round(sum(process_peak_rss_mb(p) for p in [pid, *map(int, children.stdout.split())]), 1)


def paired_ratio(sides: list[float], bases: list[float]) -> float | None:
    """The median of each round's side / base (rounds with a base of 0, as a smoke run's few
    samples may read in CPU ticks, are left out); None if no round had a base."""
    ratios = [side / base for side, base in zip(sides, bases, strict=True) if base]
    return round(statistics.median(ratios), 3) if ratios else None


def process_cpu_seconds(pid: int) -> float:
    """Return user + system CPU seconds of a local process (a server backend), 0 if hidden."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _processes() -> Any:
    """Yield (pid, command name, process group, CPU seconds) of every process this user sees.

    CPU seconds are user + system, with the process's reaped children (cutime, cstime): a
    backend that exits between two readings counts with its postmaster once reaped, not
    before (wait_for_new_server_processes).
    """
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # gone since the listing
        # The command name is in parentheses and may hold spaces: split after its last ")".
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        # Fields 14-17 of proc(5) (utime, stime, cutime, cstime), counted after the name.
        yield int(entry), name, int(fields[2]), sum(int(f) for f in fields[11:15]) / ticks


def server_cpu_seconds() -> float:
    """CPU seconds used so far by every process named postgres (backends and background)."""
    return sum(seconds for _pid, name, _pgid, seconds in _processes() if name == "postgres")


def server_pids() -> set[int]:
    """The ids of every process named postgres now (server processes, backends included)."""
    return {pid for pid, name, _pgid, _seconds in _processes() if name == "postgres"}


def wait_for_new_server_processes(before: set[int], timeout: float = 5.0) -> None:
    """Wait until every postgres process not in `before` has exited and been reaped.

    A backend's CPU moves into its postmaster's (cutime, cstime) only once the postmaster has
    reaped it, some milliseconds after its client hung up (pgbench, a worker process): a
    reading of server_cpu_seconds() taken before that misses the backend's whole run.
    """
    deadline = time.monotonic() + timeout
    while server_pids() - before and time.monotonic() < deadline:
        time.sleep(0.02)


ROLES = ("web", "postgres", "load", "other")


def cpu_reading(group_pid: int) -> dict[int, tuple[str, float]]:
    """Each process's role and CPU seconds (user + system) so far, by pid: one reading.

    "web": the process group group_pid leads (gunicorn's master and workers); "postgres": every
    process named postgres (the server's backends, and its background workers); "load": this
    process (the load generator's threads); "other": everything else. Reaped children count
    with their parent (_processes). cpu_used_by_role compares two readings.
    """
    reading = {}
    for pid, name, pgid, seconds in _processes():
        if pid == os.getpid():
            role = "load"
        elif pgid == group_pid:
            role = "web"
        elif name == "postgres":  # every server process keeps its binary's name in stat
            role = "postgres"
        else:
            role = "other"
        reading[pid] = (role, seconds)
    return reading


def cpu_used_by_role(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each role used between two readings, process by process.

    A process in both counts what it used since the first, in its role at the second; one
    that started in between counts whole (as does a pid reused by a new process, whose count
    went down); one that ended in between adds nothing more (its parent's count grows when
    it is reaped). Summing each role at each reading and subtracting instead once put 428 s
    of a long-lived process's CPU under PostgreSQL at one reading and elsewhere at the next.
    """
    used = dict.fromkeys(ROLES, 0.0)
    for pid, (role, seconds) in after.items():
        earlier = before.get(pid)
        grew = seconds - earlier[1] if earlier is not None and seconds >= earlier[1] else seconds
        used[role] += grew
    return used


def machine() -> dict[str, Any]:
    """Describe the machine and PostgreSQL server, for the results file."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0]
    mem = ""
    with contextlib.suppress(OSError, IndexError):
        mem = (
            subprocess.run(["free", "-g"], capture_output=True, text=True).stdout.split()[7]
            + " GiB"
        )
    return {
        "cores": os.cpu_count(),
        "memory": mem,
        "postgresql": pg,
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def write_results(name: str, data: dict[str, Any]) -> Path:
    """Write results JSON under bench/results/ and return its path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


def stocked_queue(
    base: str, *, smoke: bool, slug: str, reviewers: int, stock: int
) -> tuple[str, Any, Any, list[int]]:
    """A scratch database holding one bench_queue with `stock` pending items.

    Returns (database name, queue, reason code, reviewer user ids); Django's connection is
    closed, so processes started next find no session of ours in the way.
    """
    from django.db import connection

    db = bench_database(base, smoke=smoke)
    scratch_database(db)
    queue, reason, users = bench_queue(slug, reviewers=reviewers)
    load_pending(queue.pk, stock, prefix=slug)
    connection.close()
    return db, queue, reason, users


def bench_queue(slug: str, *, reviewers: int) -> tuple[Any, Any, list[int]]:
    """Create a queue with one approve reason ("ok") and reviewers who may claim in it.

    Returns (queue, reason code, reviewer user ids). Call after scratch_database().
    """
    from django.contrib.auth.models import Group, User

    from queue_app.models import Queue, ReasonCode

    group = Group.objects.create(name=f"{slug} reviewers")
    queue = Queue.objects.create(slug=slug, name=slug.title())
    queue.reviewer_groups.add(group)
    reason = ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="OK")
    users = []
    for i in range(reviewers):
        user = User.objects.create_user(f"{slug}-{i}")
        user.groups.add(group)
        users.append(user.pk)
    return queue, reason, users


def load_pending(queue_id: int, n: int, *, prefix: str, payload: str = '{"amount": 12.50}') -> None:
    """Bulk-load n pending items (oldest first, one payload for all) with SQL, then VACUUM
    ANALYZE so the planner sees them. Keys carry a random part, so loading again adds more.

    Each item gets its stored evidence hash, as intake gives it (ReviewItem.evidence_hash):
    the canonical evidence differs between items only by the subject, so SQL hashes the
    canonical text with the subject spliced in; one loaded row is checked against Python's.
    """
    from django.db import connection

    from queue_app.evidence import canonical_evidence, item_evidence_hash
    from queue_app.jsonutil import exact_loads
    from queue_app.models import ReviewItem

    assert re.fullmatch(r"[A-Za-z0-9_-]+", prefix), "the subject is spliced in as JSON text"
    marker = "SUBJECT-MARKER"
    head, tail = canonical_evidence(subject=marker, payload=exact_loads(payload)).split(
        f'"{marker}"'
    )
    with connection.cursor() as c:
        c.execute(
            """
            INSERT INTO queue_app_reviewitem
                (queue_id, state, priority, created_at, subject, payload, idempotency_key,
                 source_hash, trace_id, lease_count, evidence_hash)
            SELECT %(queue_id)s, 'pending', 0, clock_timestamp(), subject, %(payload)s::jsonb,
                   %(prefix)s || '-' || g || '-' || gen_random_uuid(), '', gen_random_uuid(), 0,
                   encode(sha256(convert_to(%(head)s || '"' || subject || '"' || %(tail)s,
                                            'UTF8')), 'hex')
              FROM generate_series(1, %(n)s) AS g,
                   LATERAL (SELECT %(prefix)s || ' ' || g AS subject) AS s
            """,
            {
                "queue_id": queue_id,
                "n": n,
                "prefix": prefix,
                "payload": payload,
                "head": head,
                "tail": tail,
            },
        )
        c.execute("VACUUM ANALYZE queue_app_reviewitem")
    sample = ReviewItem.objects.filter(queue_id=queue_id).order_by("-id").first()
    if sample is not None:
        assert sample.evidence_hash == item_evidence_hash(sample), "stored hash is not the row's"


def reviewer_process(user_id: int, queue_id: int) -> tuple[Any, Any]:
    """In a spawned process: set Django up; return (queue, reviewer) for review_next()."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User

    from queue_app.models import Queue

    return Queue.objects.get(pk=queue_id), User.objects.get(pk=user_id)


def review_next(queue: Any, reviewer: Any) -> Any:
    """One reviewer cycle through the services, as B3, B5, B6 and the profile measure it: claim
    the next item and approve it ("ok") with the hash of what was shown. Returns the decision,
    or None if no item was left."""
    from queue_app.evidence import item_evidence_hash
    from queue_app.services import claim_next, submit_decision

    item = claim_next(queue=queue, reviewer=reviewer)
    if item is None:
        return None
    return submit_decision(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="ok",
        evidence_hash=item_evidence_hash(item),
        queue_id=item.queue_id,
    )


def _after_setup(target: Callable[..., Any], arg: Any, barrier: Any, out: Any) -> None:
    def ready() -> None:
        # Every side's process, ours and its peers', runs with the collector settings of the
        # app's long-running processes (reviewconsole/gc_tuning.py), set once it has loaded.
        from reviewconsole import gc_tuning

        gc_tuning.tune()
        barrier.wait()

    out.put(target(arg, ready))


def start_together(
    target: Callable[[Any, Callable[[], Any]], Any],
    args: list,
    *,
    on_start: Callable[[], Any] | None = None,
) -> tuple:
    """Run target(arg, ready) in one spawned process per arg, all starting work at once.

    Each process sets itself up (Django, imports, a connection), calls ready() and then works;
    ready() returns when every process is set up. Returns the start time (time.perf_counter,
    which is system-wide here) and each process's result. Without it a rate over many
    processes measures their start-up too: 32 Django set-ups take seconds of the same 2 cores.
    on_start runs in this process as the work starts (a reading of the server's CPU, say).
    """
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(args) + 1)
    out = ctx.Queue()
    procs = [ctx.Process(target=_after_setup, args=(target, a, barrier, out)) for a in args]
    for p in procs:
        p.start()
    barrier.wait(timeout=300)
    started = time.perf_counter()
    if on_start is not None:
        on_start()
    results = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join()
    return started, results


# -- app processes ------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, picked by the kernel (so two runs
    on one machine never reach for the same one); the tests' servers use it too."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_web(
    env: dict[str, str],
    workers: int,
    log_path: Path,
    *,
    wait_seconds: float = 180,
    app: str = "reviewconsole.wsgi",
    extra_args: tuple[str, ...] = (),
) -> tuple[subprocess.Popen, int]:
    """Start gunicorn on a free loopback port with this environment, its output in log_path;
    return the process (leading its own process group) and the port once /healthz answers."""
    port = free_port()
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("gunicorn")),
                app,
                *extra_args,
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + wait_seconds  # start-up is slow on a loaded machine
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.2)
    stop_process(proc)
    raise RuntimeError(f"gunicorn did not start; see {log_path}")


def stop_process(proc: subprocess.Popen) -> int | None:
    """SIGTERM a process group we started, then SIGKILL it if it lingers; return its status."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    return proc.returncode


def run_pgbench(clients: int, script: str, seconds: float, dbname: str) -> dict:
    """Run a pgbench script (prepared) on dbname at this many clients; return its rate."""
    p = server_params()
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    cmd = [
        shutil.which("pgbench") or "pgbench",
        "-n",
        "-M",
        "prepared",
        "-f",
        f.name,
        "-c",
        str(clients),
        "-j",
        str(min(clients, os.cpu_count() or 2)),
        "-T",
        str(max(1, int(seconds))),
        "-h",
        p["host"],
        "-U",
        p["user"],
        dbname,
    ]
    if p["port"]:
        cmd[1:1] = ["-p", p["port"]]
    done = subprocess.run(cmd, capture_output=True, text=True)
    os.unlink(f.name)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed: {done.stderr[-1500:]}")
    tps = float(re.search(r"tps = ([\d.]+)", done.stdout).group(1))
    failed = re.search(r"number of failed transactions: (\d+)", done.stdout)
    return {"per_second": round(tps, 1), "failed": int(failed.group(1)) if failed else 0}
