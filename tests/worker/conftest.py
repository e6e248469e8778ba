"""Fixtures for the apply worker: decisions to apply, a ledger effect, real worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.db import connection

from queue_app.models import Decision, Queue, Verdict
from queue_app.services import claim_batch, submit_decision
from tests.conftest import make_items, shown_hash
from tests.worker.ledger import LEDGER_TABLE

PROJECT_DIR = Path(__file__).resolve().parents[2]
LEDGER_EFFECT = "tests.worker.ledger.record"

REASON_FOR = {
    Verdict.APPROVE: "verified",
    Verdict.REJECT: "fraud",
    Verdict.ESCALATE: "policy_gap",
}


def decide(
    queue: Queue, reviewer: User, n: int, *, verdict: str = Verdict.APPROVE, prefix: str = "d"
) -> list[Decision]:
    """Create n items and decide each through the real services (claim, then submit)."""
    make_items(queue, n, prefix=prefix)
    decisions = []
    while len(decisions) < n:
        batch = claim_batch(
            queue=queue, worker=reviewer, n=min(200, n - len(decisions)), ttl=timedelta(hours=1)
        )
        assert batch, "ran out of items to decide"
        for item in batch:
            decisions.append(
                submit_decision(
                    item_id=item.pk,
                    reviewer=reviewer,
                    lease_token=item.lease_token,
                    verdict=verdict,
                    reason_code=REASON_FOR[verdict],
                    evidence_hash=shown_hash(item),
                )
            )
    return decisions


def ledger_counts() -> dict[int, int]:
    """Return how many ledger rows each decision has."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT decision_id, count(*) FROM {LEDGER_TABLE} GROUP BY decision_id")
        return dict(cursor.fetchall())


@pytest.fixture
def ledger(db) -> Iterator[None]:
    """Create the ledger table a test effect writes to (no unique constraint, on purpose)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} "
            "(id bigserial PRIMARY KEY, decision_id bigint NOT NULL, "
            "at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {LEDGER_TABLE}")


@pytest.fixture
def ledger_queue(queue: Queue, ledger: None) -> Queue:
    """The kyc queue (with its escalation queue), its effect writing the ledger."""
    queue.effect = LEDGER_EFFECT
    queue.save(update_fields=["effect"])
    return queue


def database_url(settings_dict: dict[str, Any], *, name: str | None = None) -> str:
    """Build a DATABASE_URL for a child process from a Django connection's settings.

    `name` names another database on the same server (the URL of a Unix-socket server carries
    its directory in the query string, so the path's last segment is not the database name).
    """
    host = settings_dict.get("HOST") or settings_dict.get("OPTIONS", {}).get("host", "")
    user = quote(settings_dict.get("USER") or "postgres")
    password = settings_dict.get("PASSWORD") or ""
    auth = f"{user}:{quote(password)}" if password else user
    name = name or settings_dict["NAME"]
    if host.startswith("/"):
        # A Unix socket directory: passed as a query parameter (django-environ reads it).
        return f"postgres://{auth}@/{name}?host={host}"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgres://{auth}@{host}{port}/{name}"


class WorkerProcess:
    """A real `manage.py run_apply_worker` child process, its output kept in a log file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_apply_worker", *args],
            cwd=PROJECT_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.returncode is not None:
                self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._log.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def worker_env(tmp_path: Path) -> Callable[..., dict[str, str]]:
    """Return a function building a child environment pointed at a database."""

    def build(settings_dict: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env["DATABASE_URL"] = database_url(settings_dict or connection.settings_dict)
        env["LOG_LEVEL"] = env.get("WORKER_TEST_LOG_LEVEL", "INFO")
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra)
        return env

    return build


@pytest.fixture
def spawn_worker(
    tmp_path: Path, worker_env: Callable[..., dict[str, str]]
) -> Iterator[Callable[..., WorkerProcess]]:
    """Start worker processes; any still running at the end of the test are killed."""
    started: list[WorkerProcess] = []

    def spawn(*args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        log_path = tmp_path / f"worker-{len(started)}.log"
        worker = WorkerProcess(list(args), env or worker_env(), log_path)
        started.append(worker)
        return worker

    yield spawn
    for worker in started:
        worker.stop()


def wait_until(condition: Callable[[], Any], *, timeout: float = 60, what: str = "") -> Any:
    """Poll condition until it returns something truthy; fail the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what or condition}")
        time.sleep(0.02)
