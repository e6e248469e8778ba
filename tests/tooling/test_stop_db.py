"""`make stop` stops the embedded PostgreSQL, and `make clean` stops it before deleting var/.

Each test runs its own embedded server in a scratch data folder (never the suite's own), and
a copy of the Makefile and bin/ in a scratch checkout for `make clean`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from reviewconsole import embedded_pg

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A scratch checkout: the Makefile, bin/, and a .venv whose python is the suite's."""
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copy(REPO / "Makefile", root / "Makefile")
    shutil.copytree(REPO / "bin", root / "bin")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return root


@pytest.fixture
def running_server(checkout: Path):
    """An embedded server running in the scratch checkout's var/pg; stopped at the end anyway."""
    server = embedded_pg.private_server(checkout / "var" / "pg")
    pid = server.get_pid()
    yield pid
    if not stopped(pid):
        embedded_pg.stop_server(server)


def stopped(pid: int) -> bool:
    """Return whether the process has exited (a zombie awaiting its parent's wait counts)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def make(checkout: Path, target: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REVIEWCONSOLE_DATA_DIR", None)
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(checkout), target],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_make_stop_stops_the_embedded_server(checkout, running_server):
    result = make(checkout, "stop")

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"==> embedded PostgreSQL: stopped ({Path('var') / 'pg'})\n"
    assert stopped(running_server)
    assert (checkout / "var" / "pg").is_dir()  # stopped, not deleted


def test_make_stop_does_not_start_a_stopped_server(checkout, running_server):
    make(checkout, "stop")

    result = make(checkout, "stop")

    assert result.stdout == "==> embedded PostgreSQL: not running\n"
    assert not (checkout / "var" / "pg" / "postmaster.pid").exists()


def test_make_clean_stops_the_server_before_deleting_var(checkout, running_server):
    result = make(checkout, "clean")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"==> embedded PostgreSQL: stopped ({Path('var') / 'pg'})",
        "==> removing .venv, var/, .pytest_cache and the egg-info pip left",
    ]
    assert stopped(running_server)
    assert not (checkout / "var").exists()


def test_make_clean_without_a_server_just_cleans(checkout):
    result = make(checkout, "clean")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("==> embedded PostgreSQL: not running\n")
    assert not (checkout / ".venv").exists()


def test_without_a_virtualenv_the_server_is_stopped_all_the_same(checkout, running_server):
    (checkout / ".venv" / "bin" / "python").unlink()

    env = {k: v for k, v in os.environ.items() if k not in ("PY", "REVIEWCONSOLE_DATA_DIR")}
    result = subprocess.run(
        [str(checkout / "bin" / "stop-db")], env=env, capture_output=True, text=True, timeout=120
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == "==> embedded PostgreSQL: stopped (var/pg)\n"
    assert stopped(running_server)
