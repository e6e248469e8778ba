"""The database goes away under a running worker and comes back: nothing lost, nothing doubled.

This test runs its own PostgreSQL in a temporary folder (never the shared embedded server) and
stops and starts it while the worker is applying a backlog.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reviewconsole import embedded_pg
from tests.worker.conftest import PROJECT_DIR, wait_until
from tests.worker.ledger import LEDGER_TABLE

pytestmark = pytest.mark.slow

DECISIONS = 200


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[Any]:
    server = embedded_pg.private_server(tmp_path / "pg")
    try:
        yield server
    finally:
        embedded_pg.stop_server(server)


def _query(socket_dir: str, sql: str) -> Any:
    with psycopg.connect(host=socket_dir, user="postgres", dbname="outage") as conn:
        return conn.execute(sql).fetchall()


def test_the_worker_reconnects_and_finishes_the_backlog(private_server, worker_env, spawn_worker):
    socket_dir = str(private_server.get_postmaster_info().socket_dir)
    with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as c:
        c.execute("CREATE DATABASE outage")
    settings_dict = {"HOST": socket_dir, "USER": "postgres", "NAME": "outage"}
    env = worker_env(settings_dict, LEDGER_MAX_SLEEP="0.02")
    for command in (
        ["migrate", "--noinput", "-v0"],
        ["shell", "-c", f"from tests.worker.outage_seed import seed; seed({DECISIONS})"],
    ):
        subprocess.run(
            [sys.executable, "manage.py", *command], cwd=PROJECT_DIR, env=env, check=True
        )

    def applied() -> int:
        return _query(socket_dir, "SELECT count(*) FROM queue_app_applieddecision")[0][0]

    worker = spawn_worker(
        "--batch-size", "5", "--poll-interval", "0.1", "--escalate-every", "0", env=env
    )
    wait_until(lambda: applied() >= 20, what="the worker to get going")

    embedded_pg.stop_server(private_server)
    wait_until(lambda: "database unavailable; reconnecting" in worker.output(), what="a reconnect")
    time.sleep(1.0)  # stay down across a few of its retries
    embedded_pg.start_server(private_server)
    assert str(private_server.get_postmaster_info().socket_dir) == socket_dir

    wait_until(lambda: applied() == DECISIONS, what="the backlog to finish")
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, worker.output()

    ledger = _query(socket_dir, f"SELECT decision_id, count(*) FROM {LEDGER_TABLE} GROUP BY 1")
    assert len(ledger) == DECISIONS
    assert {count for _, count in ledger} == {1}
    undone = _query(socket_dir, "SELECT count(*) FROM queue_app_effectjob WHERE done_at IS NULL")
    assert undone == [(0,)]
    assert "database reachable again" in worker.output()
