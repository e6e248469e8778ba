"""The secret key of the embedded development setup: made once, kept under the data folder.

`make run` starts the web server and worker with DEBUG on; a management command typed in
another shell afterwards (`manage.py verify_decisions`, `create_api_client`) runs with DEBUG off
and no key, and must sign with the same key the web server uses. Only the embedded database
(DATABASE_URL unset) uses this: a deployment names its database and must set SECRET_KEY.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

#: check --deploy flags a key with this prefix (security.W009): never a production key.
PREFIX = "django-insecure-"
FILE_NAME = "dev-secret-key"


def development_key(data_dir: Path) -> str:
    """Return the data folder's development key, creating it (owner-only) on first use."""
    path = data_dir / FILE_NAME
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = PREFIX + secrets.token_urlsafe(50)
    try:
        # O_EXCL: two processes starting at once (web server and worker) keep one key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path)
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    return key


def _read(path: Path) -> str:
    key = path.read_text().strip()
    if not key:
        # Written by the other process a moment ago but not yet flushed: take its key next time.
        raise FileNotFoundError(path)
    return key
