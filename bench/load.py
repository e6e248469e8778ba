"""Mixed load for the soak and the outage test: reviewers over HTTP, API clients, the worker.

Reviewers drive the console through gunicorn (next -> item -> decide), API clients feed the
queue and adjudicate (intake, batch leases, decisions, some releases), and a real
`run_apply_worker` applies every decision through a ledger effect that would show a double.
Clients retry through friendly 503s the way a person would; what each was told succeeded is
kept, so the counts at the end can say whether anything acknowledged went missing.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, start_web
from bench.web import PASSWORD, Reviewer

QUEUE = "soak"
LEDGER = "soak_ledger"
EFFECT = "bench.load.record_effect"
# Words the app's friendly 503s carry (queue_app.error_middleware, the console, the API).
FRIENDLY_503 = (
    "temporarily unavailable",
    "did not answer in time",
    '"code": "unavailable"',
    '"code": "busy"',
    '"code":"unavailable"',
    '"code":"busy"',
)
# Session guards for every process the soak starts; short, so a stuck session ends in-run.
IDLE_IN_TRANSACTION_MS = 3000


# -- the effect (imported by the worker process) ----------------------------------------------


def record_effect(decision: Any) -> None:
    """Write one ledger row per application; no unique constraint, so a double would show."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {LEDGER} (decision_id) VALUES (%s)", [decision.pk])


# -- setup (runs with Django configured on the target database) -------------------------------


def seed(*, reviewers: int, api_clients: int, stock: int) -> dict[str, Any]:
    """Create the ledger, a queue, reviewers, API clients and stock; return names and tokens."""
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from queue_app.api.auth import issue_api_client
    from queue_app.models import Queue, ReasonCode
    from queue_app.services.evidence_backfill import backfill_evidence_hashes

    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {LEDGER} (id bigserial PRIMARY KEY, "
            "decision_id bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
    group = Group.objects.create(name="Soak reviewers")
    queue = Queue.objects.create(slug=QUEUE, name="Soak", effect=EFFECT, max_in_flight=100_000)
    queue.reviewer_groups.add(group)
    ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="OK")
    ReasonCode.objects.create(queue=queue, verdict="reject", code="no", label="No")
    users = []
    for i in range(reviewers):
        user = User.objects.create_user(f"soak-{i}", password=PASSWORD)
        user.groups.add(group)
        users.append(user.username)
    tokens = [
        issue_api_client(
            name=f"soak-api-{i}", can_intake=True, can_adjudicate=True, queues=[queue]
        )[1]
        for i in range(api_clients)
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_reviewitem
                (queue_id, state, priority, created_at, subject, payload, idempotency_key,
                 source_hash, trace_id, lease_count)
            SELECT %s, 'pending', 0, clock_timestamp(), 'Statement ' || g,
                   jsonb_build_object('ledger_entity', 'ACME-CORP', 'variance_amount', 12.50,
                                      'currency', 'EUR', 'line', g),
                   'soak-seed-' || g, '', gen_random_uuid(), 0
              FROM generate_series(1, %s) AS g
            """,
            [queue.pk, stock],
        )
    # Written below the services, so without a stored evidence hash, which the decide needs:
    # stored as an operator stores it for such rows.
    for _ in backfill_evidence_hashes():
        pass
    return {"users": users, "tokens": tokens}


# -- traffic ----------------------------------------------------------------------------------


@dataclass
class Tally:
    """Counters shared by the traffic threads, plus what the clients were told succeeded."""

    counts: Counter = field(default_factory=Counter)
    acknowledged_items: set[int] = field(default_factory=set)  # console decide answered 302
    acknowledged_decisions: set[int] = field(default_factory=set)  # API decision 200/201
    bad_samples: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] += n

    def answer(self, status: int, body: str) -> str:
        """Classify a response: 'ok', 'friendly_503' or 'server_error'; count 5xx."""
        if status < 500:
            return "ok"
        friendly = (
            status == 503
            and "Traceback" not in body
            and any(words in body for words in FRIENDLY_503)
        )
        with self.lock:
            self.counts["5xx"] += 1
            if friendly:
                self.counts["friendly_503"] += 1
                return "friendly_503"
            self.counts["server_error"] += 1
            if len(self.bad_samples) < 5:
                self.bad_samples.append(f"{status}: {body[:300]}")
        return "server_error"


class ApiSession:
    """A keep-alive JSON client for /api/v1/ with a bearer token."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str]:
        data = json.dumps(body) if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        for attempt in (1, 2):
            try:
                self.conn.request(method, f"/api/v1{path}", body=data, headers=headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read().decode("utf-8", "replace")
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


class Traffic:
    """Reviewer and API threads against one gunicorn, until stopped."""

    def __init__(self, port: int, users: list[str], tokens: list[str], think: float) -> None:
        self.port, self.users, self.tokens, self.think = port, users, tokens, think
        self.tally = Tally()
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        reviewers = [Reviewer(self.port, name) for name in self.users]
        for reviewer in reviewers:
            reviewer.login()
        for reviewer in reviewers:
            self._spawn(self._reviewer_loop, reviewer)
        for i, token in enumerate(self.tokens):
            self._spawn(self._api_loop, ApiSession(self.port, token), i)

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=self._guarded, args=(target, *args), daemon=True)
        self.threads.append(thread)
        thread.start()

    def _guarded(self, target: Callable[..., None], *args: Any) -> None:
        while not self.stop_event.is_set():
            try:
                target(*args)
            except (OSError, http.client.HTTPException) as exc:
                # The web server itself did not answer: count it, go on.
                self.tally.add("transport_errors")
                with self.tally.lock:
                    if len(self.tally.bad_samples) < 5:
                        self.tally.bad_samples.append(f"transport: {exc!r}")
                self.stop_event.wait(0.5)

    def _pause(self, seconds: float | None = None) -> None:
        self.stop_event.wait(self.think if seconds is None else seconds)

    # One reviewer: next -> item -> decide; a 503 anywhere means wait and carry on, and a
    # decision is re-posted with the same token until it is answered (the fence makes it safe).
    def _reviewer_loop(self, reviewer: Reviewer) -> None:
        tally = self.tally
        status, headers, body = reviewer.request("POST", f"/queues/{QUEUE}/next/", {})
        if tally.answer(status, body) != "ok":
            return self._pause(0.5)
        match = re.search(r"/items/(\d+)/", headers.get("Location", ""))
        if status != 302 or not match:
            tally.add("queue_empty")
            return self._pause(0.5)
        tally.add("claims")
        self._pause()
        item_id = int(match.group(1))
        while True:
            status, _, page = reviewer.request("GET", f"/items/{item_id}/")
            if tally.answer(status, page) == "ok":
                break
            if self.stop_event.is_set():
                return None
            self._pause(0.5)
        token = re.search(r'name="lease_token" value="([^"]+)"', page)
        evidence = re.search(r'name="evidence_hash" value="([^"]+)"', page)
        if not token or not evidence:
            tally.add("item_without_form")
            return None
        self._pause()
        form = {
            "lease_token": token.group(1),
            "evidence_hash": evidence.group(1),
            "verdict": "approve",
            "reason_code": "ok",
            "note": "soak",
        }
        while True:
            status, _, body = reviewer.request("POST", f"/items/{item_id}/decide/", form)
            if tally.answer(status, body) == "ok":
                break
            if self.stop_event.is_set():
                return None  # never answered: not acknowledged, so not counted as lost
            self._pause(0.5)
        if status == 302:
            with tally.lock:
                tally.acknowledged_items.add(item_id)
            tally.add("console_decisions")
        return None

    # One API client: feed five items, lease five, decide four, release one.
    def _api_loop(self, api: ApiSession, n: int) -> None:
        tally = self.tally
        for _ in range(5):
            key = f"soak-api-{n}-{tally.counts['intake']}-{time.monotonic_ns()}"
            status, body = api.call(
                "POST",
                "/items",
                {
                    "queue": QUEUE,
                    "subject": f"Payment {key}",
                    "payload": {"amount": "1234.56", "currency": "EUR", "key": key},
                    "idempotency_key": key,
                    "source_hash": "soak",
                },
            )
            if tally.answer(status, body) == "ok" and status in (200, 201):
                tally.add("intake")
        status, body = api.call(
            "POST", f"/queues/{QUEUE}/leases", {"batch_size": 5, "lease_seconds": 120}
        )
        if tally.answer(status, body) != "ok" or status != 200:
            return self._pause(0.5)
        items = json.loads(body)["items"]
        tally.add("claims", len(items))
        tally.add("api_leased", len(items))
        for i, item in enumerate(items):
            self._pause()
            if i == 4:
                status, body = api.call(
                    "POST", f"/items/{item['id']}/release", {"lease_token": item["lease_token"]}
                )
                if tally.answer(status, body) == "ok":
                    tally.add("api_released")
                continue
            decision = {
                "lease_token": item["lease_token"],
                "verdict": "approve",
                "reason_code": "ok",
                "evidence_hash": item["evidence_hash"],
            }
            while True:
                status, body = api.call("POST", f"/items/{item['id']}/decision", decision)
                if tally.answer(status, body) == "ok":
                    break
                if self.stop_event.is_set():
                    return None
                self._pause(0.5)
            if status in (200, 201):
                with tally.lock:
                    tally.acknowledged_decisions.add(json.loads(body)["id"])
                tally.add("api_decisions")
            else:
                tally.add(f"api_decision_{status}")
        if not items:
            self._pause(0.5)
        return None


# -- processes --------------------------------------------------------------------------------


def child_env(url: str, **extra: str) -> dict[str, str]:
    """Return the environment for an app process on url, with short session guards."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(
        DATABASE_URL=url,
        DEBUG="false",
        LOG_LEVEL=os.environ.get("SOAK_LOG_LEVEL", "WARNING"),
        PYTHONUNBUFFERED="1",
        DB_IDLE_IN_TRANSACTION_TIMEOUT_MS=str(IDLE_IN_TRANSACTION_MS),
        # Effects come from an allow-list: register the ledger effect the way a deployment would.
        REVIEW_EFFECTS=f"soak_record={EFFECT}",
    )
    env.update(extra)
    return env


def start_gunicorn(url: str, workers: int, log_path: Path) -> tuple[subprocess.Popen, int]:
    """Start gunicorn on url with the soak's environment; return it and its port once up."""
    return start_web(child_env(url), workers, log_path, wait_seconds=60)


def start_worker(url: str, log_path: Path) -> subprocess.Popen:
    """Start a real apply worker on url, its output in log_path."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "run_apply_worker",
                "--batch-size",
                "20",
                "--poll-interval",
                "0.5",
                "--backoff-base",
                "0.5",
            ],
            cwd=ROOT,
            env=child_env(url, LOG_LEVEL="INFO"),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


# -- counting ---------------------------------------------------------------------------------

# Each is a count that must be 0 once the outbox has drained.
INVARIANTS = {
    "decisions_without_effect_job": """
        SELECT count(*) FROM queue_app_decision d
         WHERE NOT EXISTS (SELECT 1 FROM queue_app_effectjob j WHERE j.decision_id = d.id)""",
    "decided_items_without_decision": """
        SELECT count(*) FROM queue_app_reviewitem i
         WHERE i.state = 'decided'
           AND NOT EXISTS (SELECT 1 FROM queue_app_decision d WHERE d.item_id = i.id)""",
    "items_decided_twice": """
        SELECT count(*) FROM (SELECT item_id FROM queue_app_decision WHERE verdict <> 'overturn'
                               GROUP BY item_id HAVING count(*) > 1) t""",
    "decisions_not_applied": """
        SELECT count(*) FROM queue_app_decision d
         WHERE NOT EXISTS (SELECT 1 FROM queue_app_applieddecision a WHERE a.decision_id = d.id)""",
    "decisions_applied_twice": f"""
        SELECT count(*) FROM (SELECT decision_id FROM {LEDGER}
                               GROUP BY decision_id HAVING count(*) > 1) t""",
    "applied_without_effect": f"""
        SELECT count(*) FROM queue_app_applieddecision a
         WHERE NOT EXISTS (SELECT 1 FROM {LEDGER} l WHERE l.decision_id = a.decision_id)""",
}


def count_outcome(cursor: Any, tally: Tally) -> dict[str, int]:
    """Count decisions, the invariants, and acknowledged decisions the database lacks."""
    out = {}
    for name, sql in INVARIANTS.items():
        cursor.execute(sql)
        out[name] = cursor.fetchone()[0]
    cursor.execute("SELECT count(*) FROM queue_app_decision")
    out["decisions"] = cursor.fetchone()[0]
    cursor.execute(f"SELECT count(*) FROM {LEDGER}")
    out["effects_applied"] = cursor.fetchone()[0]
    cursor.execute(
        "SELECT count(*) FROM unnest(%s::bigint[]) AS a(item_id) WHERE NOT EXISTS "
        "(SELECT 1 FROM queue_app_decision d WHERE d.item_id = a.item_id)",
        [sorted(tally.acknowledged_items)],
    )
    lost_console = cursor.fetchone()[0]
    cursor.execute(
        "SELECT count(*) FROM unnest(%s::bigint[]) AS a(id) WHERE NOT EXISTS "
        "(SELECT 1 FROM queue_app_decision d WHERE d.id = a.id)",
        [sorted(tally.acknowledged_decisions)],
    )
    # Lost: a client was told its decision was recorded and it is not there, or its effect
    # never ran.
    out["decisions_lost"] = lost_console + cursor.fetchone()[0] + out["decisions_not_applied"]
    return out


def wait_for_drain(cursor_factory: Callable[[], Any], timeout: float) -> bool:
    """Wait until every effect job is done (or dead); return whether it happened in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with cursor_factory() as cursor:
                cursor.execute("SELECT count(*) FROM queue_app_effectjob WHERE done_at IS NULL")
                if cursor.fetchone()[0] == 0:
                    return True
        except Exception:  # the database may still be coming back
            pass
        time.sleep(0.5)
    return False
