"""B10: the cost of every page against the size of the history.

Every route a person or a client uses, timed in-process through Django's test client
(middleware, session, sign-in, views, templates and SQL; no network), p50 and p95, on a small
database and on a generated history (bench/history.py), in one run, side by side, with the
ratio. Both databases come from the same generator (the same queues, reviewers, reason codes
and open work), so a route does the same thing on both; only the history differs.

One process measures both databases, sample by sample in turn (small, large, then large,
small, ...), switching Django's connection between them, so that both sides of a ratio see
the same moment of this shared machine. Commands run as the operator runs them: the export in
a process of its own (rows a second and its peak memory), verify_decisions and checkpoint.

    .venv/bin/python bench/b10.py --small rc_history_small --large rc_history2m
    .venv/bin/python bench/b10.py --smoke      # builds a tiny history for both sides (tests)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, database_url, machine, percentiles, write_results

TARGET = 1.5
QUEUE = "q01"  # the largest queue (a share of about 1/k: queue 1 is the busiest)


def _ok(response: Any, *codes: int) -> Any:
    assert response.status_code in (codes or (200,)), (
        response.status_code,
        response.content[:500],
    )
    return response


def admin_routes(client: Any) -> list[tuple[str, str]]:
    """Every admin changelist: its default view, a search (if it has one) and each filter's
    first choice, as (label, path)."""
    from django.contrib import admin
    from django.contrib.admin.views.main import ChangeList
    from django.test import RequestFactory

    routes = []
    factory = RequestFactory()
    user = client.session_user
    for model, model_admin in sorted(
        admin.site._registry.items(), key=lambda kv: kv[0]._meta.label_lower
    ):
        opts = model._meta
        path = f"/admin/{opts.app_label}/{opts.model_name}/"
        request = factory.get(path)
        request.user = user
        if not model_admin.has_view_or_change_permission(request):
            continue
        label = opts.label_lower
        routes.append((f"admin {label}", path))
        if model_admin.get_search_fields(request):
            routes.append((f"admin {label} search", f"{path}?q=h-reviewer-007"))
        try:
            cl = model_admin.get_changelist_instance(request)
        except Exception as exc:  # a changelist that cannot be built is reported, not skipped
            routes.append((f"admin {label} (changelist error {type(exc).__name__})", path))
            continue
        assert isinstance(cl, ChangeList)
        for spec in cl.filter_specs:
            choices = [c for c in spec.choices(cl) if not c.get("selected")]
            if choices:
                title = getattr(spec, "title", type(spec).__name__)
                routes.append(
                    (f"admin {label} filter {title}", f"{path}{choices[0]['query_string']}")
                )
    return routes


class Side:
    """One database's clients and state; activate() points Django's connection at it."""

    def __init__(self, name: str, db: str) -> None:
        self.name, self.db = name, db
        self.ms: dict[str, list[float]] = {}
        self.notes: dict[str, str] = {}
        self.state: dict[str, Any] = {}

    def activate(self) -> None:
        from django.db import connection

        if connection.settings_dict["NAME"] != self.db:
            connection.close()
            connection.settings_dict["NAME"] = self.db
        connection.ensure_connection()

    def setup(self) -> None:
        from django.contrib.auth.models import User
        from django.test import Client

        from queue_app.api.auth import issue_api_client
        from queue_app.models import Queue, ReviewItem

        self.activate()
        self.reviewer = User.objects.get(username="h-reviewer-001")
        self.checker = User.objects.get(username="h-reviewer-250")
        admin_user = User.objects.get(username="h-admin")
        self.people = Client()
        self.people.force_login(self.reviewer)
        self.checkers = Client()
        self.checkers.force_login(self.checker)
        self.staff = Client()
        self.staff.force_login(admin_user)
        _second_factor(self.staff, admin_user)
        self.admin_user = admin_user
        self.queue = Queue.objects.get(slug=QUEUE)
        _client, token = issue_api_client(
            name=f"b10-{self.name}-{os.getpid()}",
            can_intake=True,
            can_adjudicate=True,
            queues=list(Queue.objects.all()),
        )
        self.api = Client(headers={"Authorization": f"Bearer {token}"})
        busy = (
            ReviewItem.objects.filter(queue=self.queue, state="decided")
            .order_by("-review_round", "id")
            .first()
        )
        assert busy is not None
        self.busy_item = busy.pk


def paired(
    sides: list[Side], label: str, fn: Callable[[Side], Any], count: int, warmup: int = 1
) -> None:
    """Time fn on each side in turn, alternating which goes first, count times each."""
    for _ in range(warmup):
        for side in sides:
            side.activate()
            fn(side)
    for i in range(count):
        for side in sides if i % 2 == 0 else sides[::-1]:
            side.activate()
            t0 = time.perf_counter()
            fn(side)
            side.ms.setdefault(label, []).append((time.perf_counter() - t0) * 1000)


def console_cycle(side: Side, record: bool) -> None:
    """Next item -> the item page (a busy subject: the first pending items of the largest
    queue are all on the busiest subject) -> decide (which claims the next item and redirects
    to it); that next item is then released (untimed) so that Next claims afresh each time."""
    from queue_app.evidence import item_evidence_hash
    from queue_app.models import ReviewItem

    people = side.people
    times = {}
    t0 = time.perf_counter()
    response = _ok(people.post(f"/queues/{QUEUE}/next/"), 302)
    times["Next item"] = time.perf_counter() - t0
    item_id = int(response["Location"].rstrip("/").split("/")[-1])
    t0 = time.perf_counter()
    _ok(people.get(f"/items/{item_id}/"))
    times["item page (busy subject)"] = time.perf_counter() - t0
    item = ReviewItem.objects.get(pk=item_id)
    form = {
        "lease_token": str(item.lease_token),
        "evidence_hash": item_evidence_hash(item),
        "verdict": "approve",
        "reason_code": "approve-1",
        "queue": str(side.queue.pk),
    }
    t0 = time.perf_counter()
    _ok(people.post(f"/items/{item_id}/decide/", form), 302)
    times["decide"] = time.perf_counter() - t0
    for held in ReviewItem.objects.filter(lease_owner=side.reviewer, state="leased"):
        _ok(people.post(f"/items/{held.pk}/release/", {"lease_token": str(held.lease_token)}), 302)
    if record:
        for label, seconds in times.items():
            side.ms.setdefault(label, []).append(seconds * 1000)


def lane_cycle(side: Side, kind: str, record: bool) -> None:
    """A lane's Next and its task page; the task is released after (untimed)."""
    from queue_app.models import LaneTask

    if side.notes.get(f"lane {kind}"):
        return
    t0 = time.perf_counter()
    response = side.checkers.post(f"/queues/{QUEUE}/lanes/{kind}/next/")
    elapsed = time.perf_counter() - t0
    if response.status_code != 302 or "/lanes/" not in response["Location"]:
        side.notes[f"lane {kind}"] = "ran out of open tasks"
        return
    task_id = int(response["Location"].rstrip("/").split("/")[-1])
    t0 = time.perf_counter()
    _ok(side.checkers.get(f"/lanes/{task_id}/"))
    page = time.perf_counter() - t0
    task = LaneTask.objects.get(pk=task_id)
    _ok(
        side.checkers.post(f"/lanes/{task_id}/release/", {"lease_token": str(task.lease_token)}),
        302,
    )
    if record:
        side.ms.setdefault(f"lane {kind} Next", []).append(elapsed * 1000)
        side.ms.setdefault(f"lane {kind} page", []).append(page * 1000)


def api_cycle(side: Side, record: bool) -> None:
    t0 = time.perf_counter()
    response = _ok(
        side.api.post(
            f"/api/v1/queues/{QUEUE}/leases",
            data=json.dumps({"batch_size": 1, "lease_seconds": 120}),
            content_type="application/json",
        )
    )
    lease = time.perf_counter() - t0
    [leased] = response.json()["items"]
    body = {
        "lease_token": leased["lease_token"],
        "verdict": "approve",
        "reason_code": "approve-1",
        "evidence_hash": leased["evidence_hash"],
    }
    t0 = time.perf_counter()
    _ok(
        side.api.post(
            f"/api/v1/items/{leased['id']}/decision",
            data=json.dumps(body),
            content_type="application/json",
        ),
        201,
    )
    if record:
        side.ms.setdefault("API lease (batch 1)", []).append(lease * 1000)
        side.ms.setdefault("API decide", []).append((time.perf_counter() - t0) * 1000)


def verify_chains(sides: list[Side]) -> dict[str, Any]:
    """verify_decisions over the whole chain on each side, as the operator runs it: rows a
    second. At ten million decisions this is half an hour of one core; --verify-only runs it on
    its own (bench/results/b10-verify.json), so the routes can be timed apart from it."""
    from django.core.management import call_command

    from queue_app.models import Decision, LaneOutcome

    print("  verify_decisions", flush=True)
    verify = {}
    for side in sides:
        side.activate()
        entries = Decision.objects.count() + LaneOutcome.objects.count()
        t0 = time.perf_counter()
        call_command("verify_decisions", stdout=open(os.devnull, "w"))  # noqa: SIM115
        elapsed = time.perf_counter() - t0
        verify[side.name] = {
            "db": side.db,
            "rows": entries,
            "s": round(elapsed, 2),
            "rows_per_s": round(entries / elapsed),
        }
    return verify


def verify_only(small: str, large: str) -> dict[str, Any]:
    import django

    django.setup()
    sides = [Side("small", small), Side("large", large)]
    for side in sides:
        side.setup()
    return {"verify": verify_chains(sides), "machine": machine()}


def measure(small: str, large: str, n: int, with_verify: bool = True) -> dict[str, Any]:
    """Time every route on both databases, sample by sample in turn; return the samples."""
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    from queue_app.chain_checkpoints import generate_key

    setup_test_environment()
    sides = [Side("small", small), Side("large", large)]
    for side in sides:
        side.setup()

    def cycles(fn: Callable[[Side, bool], Any]) -> None:
        for i in range(n + 2):
            for side in sides if i % 2 == 0 else sides[::-1]:
                side.activate()
                fn(side, i >= 2)

    print("  console cycle", flush=True)
    paired(sides, "home /", lambda s: _ok(s.people.get("/")), n)
    cycles(console_cycle)
    print("  lanes", flush=True)
    for kind in ("check", "qa"):
        cycles(lambda side, record, kind=kind: lane_cycle(side, kind, record))
    print("  my work, ops, metrics, timeline", flush=True)
    paired(sides, "My work", lambda s: _ok(s.people.get("/my-work/")), n)
    # Subjects are names (bench/history.py): "smith" is the commonest surname (one subject in
    # seventeen), found early among the reviewer's newest decisions; "greta weber" is a full
    # name few items bear, so the search reads its whole scope.
    paired(
        sides,
        "My work search (a common surname)",
        lambda s: _ok(s.people.get("/my-work/?subject=smith")),
        n,
    )
    paired(
        sides,
        "My work search (a full name)",
        lambda s: _ok(s.people.get("/my-work/?subject=greta+weber")),
        n,
    )
    paired(sides, "/ops/", lambda s: _ok(s.staff.get("/ops/")), n)
    paired(sides, "/metrics", lambda s: _ok(s.staff.get("/metrics")), n)
    paired(
        sides,
        "item timeline (admin item page, 9 rounds)",
        lambda s: _ok(s.staff.get(f"/admin/queue_app/reviewitem/{s.busy_item}/change/")),
        n,
    )
    print("  API", flush=True)
    paired(
        sides,
        "API GET /items?subject_key= (busy subject)",
        lambda s: _ok(s.api.get("/api/v1/items?subject_key=subject-1")),
        n,
    )
    cycles(api_cycle)
    print("  admin changelists", flush=True)
    sides[0].activate()
    sides[0].staff.session_user = sides[0].admin_user  # type: ignore[attr-defined]
    for label, path in admin_routes(sides[0].staff):
        paired(sides, label, lambda s, path=path: _ok(s.staff.get(path)), max(3, n // 3))
    print("  checkpoint", flush=True)
    verify = verify_chains(sides) if with_verify else {}
    private, _public = generate_key()
    settings.REVIEW_CHECKPOINT_KEY = private
    paired(
        sides,
        "checkpoint",
        lambda s: call_command("checkpoint", stdout=open(os.devnull, "w")),  # noqa: SIM115
        max(3, n // 3),
    )
    return {
        "ms": {s.name: s.ms for s in sides},
        "notes": {s.name: s.notes for s in sides},
        "verify": verify,
        "machine": machine(),
    }


def _second_factor(client: Any, user: Any) -> None:
    """A staff member's session has passed the second factor (as the test suite's
    force_login does): the bench measures the pages, not the sign-in."""
    from django_otp import DEVICE_ID_SESSION_KEY
    from django_otp.plugins.otp_totp.models import TOTPDevice

    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name="bench", confirmed=True)
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = device.persistent_id
    session.save()


def _vm(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def export_child(db: str, out: str, days: int) -> None:
    """export_decisions to a file, as the operator runs it, in a process of its own: the last
    `days` days (0: the whole history); rows a second, and the process's peak memory before and
    after."""
    os.environ["DATABASE_URL"] = database_url(db)
    import django

    django.setup()
    from django.core.management import call_command

    from queue_app.models import Decision

    Decision.objects.exists()  # connected, models loaded: the baseline
    before = _vm("VmHWM")
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as target:
        t0 = time.perf_counter()
        if days:
            since = (datetime.now(UTC) - timedelta(days=days)).isoformat()
            call_command("export_decisions", output=target.name, since=since)
        else:
            call_command("export_decisions", output=target.name)
        elapsed = time.perf_counter() - t0
        rows = sum(1 for _ in open(target.name, "rb"))  # noqa: SIM115
    Path(out).write_text(
        json.dumps(
            {
                "days": days or "all",
                "rows": rows,
                "s": round(elapsed, 2),
                "rows_per_s": round(rows / elapsed),
                "peak_rss_mb_before": round(before, 1),
                "peak_rss_mb": round(_vm("VmHWM"), 1),
            }
        )
    )


def _in_child(args: list[str]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([sys.executable, __file__, *args, "--out", out.name], cwd=ROOT, check=True)
        return json.loads(Path(out.name).read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", default="rc_history_small")
    parser.add_argument("--large", default="rc_history10m")
    parser.add_argument("--n", type=int, default=20, help="samples per route and database")
    parser.add_argument(
        "--export-days", type=int, default=90, help="the export's window (0: all history)"
    )
    parser.add_argument(
        "--no-verify",
        action="store_true",
        help="skip verify_decisions; take its figures from bench/results/b10-verify.json",
    )
    parser.add_argument(
        "--verify-only",
        action="store_true",
        help="run only verify_decisions on both sides, into bench/results/b10-verify.json",
    )
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--export-runs", type=int, default=3, help="export_decisions runs a side (median kept)"
    )
    parser.add_argument("--export", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
    os.environ["LOG_LEVEL"] = "WARNING"
    if args.export:
        export_child(args.export, args.out, args.export_days)
        return
    if args.child:
        os.environ["DATABASE_URL"] = database_url(args.small)
        if args.verify_only:
            got = verify_only(args.small, args.large)
        else:
            got = measure(args.small, args.large, args.n, not args.no_verify)
        Path(args.out).write_text(json.dumps(got))
        return
    if args.smoke:
        subprocess.run([sys.executable, "bench/history.py", "--smoke"], cwd=ROOT, check=True)
        args.small = args.large = "rc_history_smoke"
        args.n = 2
    verify_name = "b10-verify-smoke" if args.smoke else "b10-verify"
    if args.verify_only:
        got = _in_child(["--child", "--verify-only", "--small", args.small, "--large", args.large])
        got["smoke"] = args.smoke
        print(write_results(verify_name, got))
        return
    t0 = time.perf_counter()
    child = ["--child", "--small", args.small, "--large", args.large, "--n", str(args.n)]
    got = _in_child(child + (["--no-verify"] if args.no_verify else []))
    if args.no_verify:
        kept = ROOT / "bench" / "results" / f"{verify_name}.json"
        earlier = json.loads(kept.read_text()) if kept.exists() else {}
        got["verify"] = earlier.get("verify", {})
        got["verify_run"] = earlier.get("machine", {}).get("date")
    # The export a few times a side, the sides in turn (small, large, large, small, ...): one
    # run of 15 s moves with the machine; the median run and the highest peak are kept.
    sides = [("small", args.small), ("large", args.large)]
    runs: dict[str, list[dict[str, Any]]] = {"small": [], "large": []}
    for i in range(args.export_runs):
        for name, db in sides if i % 2 == 0 else sides[::-1]:
            runs[name].append(_in_child(["--export", db, "--export-days", str(args.export_days)]))
    exports = {}
    for name, done in runs.items():
        median = sorted(done, key=lambda run: run["rows_per_s"])[len(done) // 2]
        exports[name] = median | {
            "runs_rows_per_s": [run["rows_per_s"] for run in done],
            "peak_rss_mb": max(run["peak_rss_mb"] for run in done),
        }
    routes = []
    for label, small in got["ms"]["small"].items():
        large = got["ms"]["large"].get(label)
        if not small or not large:
            continue
        s50, l50 = percentiles(small)["p50"], percentiles(large)["p50"]
        s95, l95 = _p95(small), _p95(large)
        routes.append(
            {
                "route": label,
                "small_p50": round(s50, 1),
                "small_p95": round(s95, 1),
                "large_p50": round(l50, 1),
                "large_p95": round(l95, 1),
                "ratio_p50": round(l50 / s50, 2),
                "ratio_p95": round(l95 / s95, 2),
                "samples": len(large),
            }
        )
    for row in routes:
        flag = "" if row["ratio_p50"] <= TARGET else "  OVER"
        print(
            f"{row['route'][:60]:<60} {row['small_p50']:>8.1f} {row['large_p50']:>9.1f} "
            f"{row['ratio_p50']:>6.2f} | p95 {row['small_p95']:>8.1f} {row['large_p95']:>9.1f} "
            f"{row['ratio_p95']:>6.2f}{flag}"
        )
    print("export", exports)
    print("verify", got["verify"])
    result: dict[str, Any] = {
        "machine": got["machine"],
        "small_db": args.small,
        "large_db": args.large,
        "n": args.n,
        "smoke": args.smoke,
        "target": TARGET,
        "run_s": round(time.perf_counter() - t0),
        "routes": routes,
        "export": exports,
        "verify": got["verify"],
        "verify_run": got.get("verify_run"),
        "notes": got["notes"],
    }
    for name, db in (("small", args.small), ("large", args.large)):
        path = ROOT / "bench" / "results" / f"history-{db}.json"
        if path.exists():
            result[f"{name}_history"] = json.loads(path.read_text())
    print(write_results("b10-smoke" if args.smoke else "b10", result))


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


if __name__ == "__main__":
    main()
