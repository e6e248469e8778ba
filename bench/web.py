"""B4: the reviewer cycle over HTTP (next -> item page -> decide) through gunicorn.

A bounded load script (standard library only): each simulated reviewer logs in once at
/accounts/login/, presses Next (POST /queues/web/next/), then repeats what a reviewer does:
open the item page, post the decision form (its hidden inputs, as a browser would: the lease
token, the evidence hash, the queue; then verdict, reason_code, note). The decide view records
the verdict, claims the next item and redirects to it, so one cycle is two requests, and
"next" is only timed when a reviewer starts. First a closed loop
finds the maximum rate; then paced loops at 50% and 90% of it record p50/p99 per page.
Peak memory is the sum of VmHWM over gunicorn's master and workers. Loopback only.

    .venv/bin/python bench/web.py            # full run
    .venv/bin/python bench/web.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import html
import http.client
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    bench_database,
    drop_database,
    load_pending,
    machine,
    peak_rss_mb,
    percentiles,
    scratch_database,
    start_web,
    stop_process,
    tree_peak_rss_mb,
    write_results,
)

DB = "rc_bench_web"
PASSWORD = "bench-password-123"


class Reviewer:
    """One browser-like session: cookies, CSRF, keep-alive connection."""

    def __init__(self, port: int, username: str) -> None:
        self.port = port
        self.username = username
        self.cookies: dict[str, str] = {}
        self.current: str | None = None
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method: str, path: str, form: dict | None = None) -> tuple[int, dict, str]:
        headers = {
            "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()),
            "Host": f"127.0.0.1:{self.port}",
        }
        body = None
        if form is not None:
            form = {**form, "csrfmiddlewaretoken": self.cookies.get("csrftoken", "")}
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Referer"] = f"http://127.0.0.1:{self.port}{path}"
        try:
            self.conn.request(method, path, body=body, headers=headers)
            resp = self.conn.getresponse()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            self.conn.request(method, path, body=body, headers=headers)
            resp = self.conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        for header, value in resp.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
        return resp.status, dict(resp.getheaders()), text

    def login(self) -> None:
        self.request("GET", "/accounts/login/")
        status, _headers, _ = self.request(
            "POST", "/accounts/login/", {"username": self.username, "password": PASSWORD}
        )
        if status != 302:
            raise RuntimeError(f"login failed for {self.username}: {status}")

    def cycle(self, timings: dict[str, list[float]]) -> bool:
        """Do one review as the console's flow goes; return False when the queue is empty."""
        if self.current is None:
            # Only at the start and after an empty queue: deciding already opens the next item.
            t0 = time.perf_counter()
            status, headers, _ = self.request("POST", "/queues/web/next/", {})
            timings["next"].append((time.perf_counter() - t0) * 1000)
            self.current = _item_path(status, headers)
            if self.current is None:
                return False
        t1 = time.perf_counter()
        status, _, page = self.request("GET", self.current)
        t2 = time.perf_counter()
        fields = decision_fields(page) if status == 200 else {}
        if "lease_token" not in fields or "evidence_hash" not in fields:
            raise RuntimeError(f"item page without a decision form ({status})")
        status, headers, _ = self.request(
            "POST",
            self.current.rstrip("/") + "/decide/",
            {
                **fields,
                "verdict": "approve",
                # The form posts the reason's code (templates/jinja2/console/item.html).
                "reason_code": "ok",
                "note": "",
            },
        )
        t3 = time.perf_counter()
        if status != 302:
            raise RuntimeError(f"decide answered {status}, not a redirect")
        timings["item"].append((t2 - t1) * 1000)
        timings["decide"].append((t3 - t2) * 1000)
        # The decide view claims the next item and redirects to it (home when the queue is empty).
        self.current = _item_path(status, headers)
        return True


_INPUT = re.compile(r"<input\b[^>]*>")
_ATTRIBUTE = re.compile(r'\b(name|value)="([^"]*)"')


def decision_fields(page: str) -> dict[str, str]:
    """What a browser posts of the decision form's own inputs: the lease token, the evidence
    hash and whatever else the page puts there (the queue, the CSRF token), by name. The
    minimal app's page has only its two inputs, in a form of its own."""
    start = page.find('id="decision-form"')
    form = page[start : page.find("</form>", start)] if start >= 0 else page
    fields = {}
    for tag in _INPUT.findall(form):
        attributes = dict(_ATTRIBUTE.findall(tag))
        if "name" in attributes and ('type="hidden"' in tag or "type=" not in tag):
            fields[attributes["name"]] = html.unescape(attributes.get("value", ""))
    return fields


def _item_path(status: int, headers: dict[str, str]) -> str | None:
    match = re.search(r"/items/\d+/", headers.get("Location", ""))
    return match.group(0) if status == 302 and match else None


def start_gunicorn(url: str, workers: int, log: Path) -> tuple[subprocess.Popen, int]:
    """Start gunicorn on url with production settings (loopback, plain http)."""
    env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING", "DEBUG": "false"}
    # Loopback, plain http: keep production settings but without the redirect to https.
    env.update(SECURE_SSL_REDIRECT="false", SECURE_COOKIES="false")
    return start_web(env, workers, log)


def run_phase(reviewers: list[Reviewer], seconds: float, rate: float | None) -> dict:
    """Run cycles for `seconds`; closed loop if rate is None, else paced to `rate` per second."""
    timings = {"next": [], "item": [], "decide": []}
    lock = threading.Lock()
    done = [0]
    stop = time.perf_counter() + seconds
    interval = len(reviewers) / rate if rate else 0.0

    def loop(r: Reviewer, offset: float) -> None:
        local = {"next": [], "item": [], "decide": []}
        next_at = time.perf_counter() + offset
        while time.perf_counter() < stop:
            if interval:
                pause = next_at - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
                next_at += interval
            if not r.cycle(local):
                break
            with lock:
                done[0] += 1
        with lock:
            for k in timings:
                timings[k] += local[k]

    threads = [
        threading.Thread(target=loop, args=(r, i * interval / max(len(reviewers), 1)))
        for i, r in enumerate(reviewers)
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    return {
        "cycles": done[0],
        "per_second": round(done[0] / elapsed, 1),
        "pages": {k: percentiles(v) for k, v in timings.items() if v},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--workers", type=int, default=None, help="gunicorn workers (4)")
    args = parser.parse_args()
    users, seconds, stock = (2, 1.0, 1_000) if args.smoke else (16, 20.0, 30_000)
    workers = args.workers or (2 if args.smoke else 4)

    db = bench_database(DB, smoke=args.smoke)
    url = scratch_database(db)
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from queue_app.models import Queue, ReasonCode

    group = Group.objects.create(name="Web reviewers")
    queue = Queue.objects.create(slug="web", name="Web")
    queue.reviewer_groups.add(group)
    ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="OK")
    for i in range(users):
        u = User.objects.create_user(f"web-{i}", password=PASSWORD)
        u.groups.add(group)
    load_pending(
        queue.pk,
        stock,
        prefix="web",
        payload='{"ledger_entity": "ACME-CORP", "variance_amount": 12.50, '
        '"match_decision": "PARTIAL", "currency": "EUR"}',
    )
    connection.close()

    log = Path(tempfile.mkstemp(prefix="bench-web-", suffix=".log")[1])
    proc, port = start_gunicorn(url, workers, log)
    try:
        reviewers = [Reviewer(port, f"web-{i}") for i in range(users)]
        for r in reviewers:
            r.login()
        results = {
            "machine": machine(),
            "smoke": args.smoke,
            "users": users,
            "gunicorn_workers": workers,
            "seconds": seconds,
        }
        peak = run_phase(reviewers, seconds, None)
        results["max"] = peak
        print(f"B4 max: {peak['per_second']} cycles/s", flush=True)
        for share in (0.5, 0.9):
            phase = run_phase(reviewers, seconds, peak["per_second"] * share)
            results[f"at_{int(share * 100)}pct"] = phase
            print(
                f"B4 at {int(share * 100)}%: {phase['per_second']}/s "
                + "  ".join(
                    f"{k} p50={v['p50']:.1f}ms p99={v['p99']:.1f}ms"
                    for k, v in phase["pages"].items()
                ),
                flush=True,
            )
        results["web_peak_rss_mb"] = tree_peak_rss_mb(proc.pid)
        results["load_generator_peak_rss_mb"] = peak_rss_mb()
        print(f"B4 gunicorn peak RSS (master + workers): {results['web_peak_rss_mb']} MiB")
    finally:
        stop_process(proc)
        log.unlink(missing_ok=True)
        drop_database(db)
    print("wrote", write_results("web-smoke" if args.smoke else "web", results))


if __name__ == "__main__":
    main()
