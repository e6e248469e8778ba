"""A real PgBouncer in transaction mode in front of the test database, started by the tests.

The session fixture writes a configuration into a folder of its own, starts Debian's
`pgbouncer` on a free port of 127.0.0.1 and stops it by its PID at the end. `through_pooler`
points the test's Django connection (and any thread's) at it for one test, with what
transaction mode needs (docs/scaling.md): no prepared statements (this PgBouncer, 1.18, does not
carry protocol-level ones), no server-side cursors, no session guards in the start-up packet.
Tests that use it commit for real (transaction=True), so each transaction is one PgBouncer lends
a server connection for.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection, connections

from tests.servers import find_program, free_port, give, run_as, server_dir, server_host

# The worker's fixtures, for the worker test here: a ledger effect and real worker processes.
from tests.worker.conftest import ledger, ledger_queue, spawn_worker, worker_env  # noqa: F401

# Server connections PgBouncer may open to the test database: fewer than the clients the
# threaded tests use, so transactions really queue for them and share them.
POOL_SIZE = 3
START_TIMEOUT = 10.0


@dataclass
class PgBouncer:
    host: str
    port: int
    pid: int
    folder: Path
    version: tuple[int, ...]
    user: str
    password: str
    # The test database's server itself, as Django settings: what DATABASE_DIRECT_URL names.
    direct: dict[str, Any]

    def log(self) -> str:
        path = self.folder / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def admin(self, command: str) -> list[dict[str, Any]]:
        """Run a command on PgBouncer's admin console (SHOW STATS, SHOW POOLS, ...)."""
        with psycopg.connect(
            host=self.host,
            port=self.port,
            dbname="pgbouncer",
            user=self.user,
            password=self.password or None,
            autocommit=True,
            prepare_threshold=None,
        ) as admin:
            cursor = admin.execute(command)
            names = [c.name for c in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def transactions(self, database: str) -> int:
        """Transactions PgBouncer has passed to the database since it started."""
        return sum(
            int(row["total_xact_count"])
            for row in self.admin("SHOW STATS")
            if row["database"] == database
        )


def _version(program: str) -> tuple[int, ...]:
    first = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=10)
    words = first.stdout.split()
    # "PgBouncer 1.18.0"
    return tuple(int(p) for p in words[1].split(".")) if len(words) > 1 else (0,)


def _quote(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


def start_pgbouncer(settings_dict: dict[str, Any], *, pool_size: int = POOL_SIZE) -> Any:
    """Start PgBouncer in transaction mode in front of the server settings_dict names; return
    it and its process."""
    program = find_program("pgbouncer", package="pgbouncer")
    user = run_as()
    folder = server_dir("pgbouncer-", user)
    host = server_host(settings_dict)
    server = f"host={host}" + (f" port={settings_dict['PORT']}" if settings_dict["PORT"] else "")
    db_user = settings_dict["USER"] or "postgres"
    password = settings_dict["PASSWORD"] or ""
    port = free_port()
    # The client is trusted (loopback, tests only); PgBouncer logs in to PostgreSQL with the
    # password of auth_file, as a deployment's would with its own.
    (folder / "users.txt").write_text(f"{_quote(db_user)} {_quote(password)}\n")
    (folder / "pgbouncer.ini").write_text(
        f"""[databases]
* = {server}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder / "users.txt"}
admin_users = {db_user}
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 200
; Not `options`: PgBouncer refuses a client sending it, as a deployment's would, so a process
; started with REVIEW_TRANSACTION_POOLER that still sent the session guards fails here.
ignore_startup_parameters = extra_float_digits
server_reset_query =
logfile = {folder / "pgbouncer.log"}
pidfile = {folder / "pgbouncer.pid"}
"""
    )
    for name in ("users.txt", "pgbouncer.ini"):
        give(folder / name, user)
    proc = subprocess.Popen(
        [program, str(folder / "pgbouncer.ini")],
        user=user,
        stdout=subprocess.DEVNULL,
        stderr=(folder / "stderr.log").open("wb"),
    )
    bouncer = PgBouncer(
        host="127.0.0.1",
        port=port,
        pid=proc.pid,
        folder=folder,
        version=_version(program),
        user=db_user,
        password=password,
        direct=dict(settings_dict),
    )
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            bouncer.admin("SHOW VERSION")
            return bouncer, proc
        except psycopg.OperationalError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                log = bouncer.log()[-2000:] + (folder / "stderr.log").read_text(errors="replace")
                stop_pgbouncer(proc, folder)
                pytest.fail(
                    f"PgBouncer did not start within {START_TIMEOUT:.0f} s ({exc}); its log:\n"
                    + log[-3000:],
                    pytrace=False,
                )
            time.sleep(0.05)


def stop_pgbouncer(proc: subprocess.Popen[bytes], folder: Path | None = None) -> None:
    """Stop PgBouncer by its PID (SIGTERM: at once, its clients cut off), reap it, and remove
    its folder."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pgbouncer(django_db_setup: None, django_db_blocker: Any) -> Iterator[PgBouncer]:
    """PgBouncer in transaction mode in front of the test database's server, for the session."""
    with django_db_blocker.unblock():
        settings_dict = dict(connection.settings_dict)
    bouncer, proc = start_pgbouncer(settings_dict)
    try:
        yield bouncer
    finally:
        stop_pgbouncer(proc, bouncer.folder)


POOLED_SETTINGS = {
    "REVIEW_TRANSACTION_POOLER": True,
    "REVIEW_PREPARED_STATEMENTS": False,
}


@pytest.fixture
def through_pooler(pgbouncer: PgBouncer, transactional_db: None, settings: Any) -> Iterator[Any]:
    """For one test, every connection to the default database goes through PgBouncer, set up as
    reviewconsole/settings.py sets it up for REVIEW_TRANSACTION_POOLER."""
    for name, value in POOLED_SETTINGS.items():
        setattr(settings, name, value)
    saved = connection.settings_dict.copy()
    saved_options = dict(saved.get("OPTIONS", {}))
    connections.close_all()
    # Threads build their connections from this same dict: they go through PgBouncer too.
    options = {k: v for k, v in saved_options.items() if k not in ("options", "prepare_threshold")}
    connection.settings_dict.update(
        HOST=pgbouncer.host,
        PORT=str(pgbouncer.port),
        OPTIONS=options,
        DISABLE_SERVER_SIDE_CURSORS=True,
    )
    try:
        yield pgbouncer
    finally:
        connections.close_all()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        connection.settings_dict["OPTIONS"] = saved_options
