"""Settings for the test suite: the production settings, spoken over plain http.

The test client, live_server and the servers tests start in subprocesses (which inherit
DJANGO_SETTINGS_MODULE) talk http on loopback, so the HTTPS-only defaults are switched off
here and nowhere else, and a key is provided. tests/security checks the production settings
themselves.
"""

from __future__ import annotations

import os

# The production settings refuse to start without a key when DEBUG is off; the suite runs them
# with DEBUG off, on a key of its own. Set in the environment so that the servers and workers
# tests start in subprocesses (production settings, DEBUG off) inherit it.
os.environ.setdefault("SECRET_KEY", "test-suite-only-key-never-used-outside-the-tests-0123456789")

from reviewconsole.settings import *  # noqa: F403

SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0

# The test suite's effects (tests/worker/ledger.py), registered the way a deployment would; the
# worker processes the tests start inherit this settings module.
REVIEW_EFFECTS = {
    **REVIEW_EFFECTS,  # noqa: F405
    **{
        f"ledger_{name}": f"tests.worker.ledger.{name}"
        for name in ("record", "failing", "gated", "flaky", "exits", "interrupts")
    },
}

# Attachments the tests store go to a directory of their own (content-addressed, so tests
# running side by side share blobs harmlessly), never the development server's var/attachments.
STORAGES = {
    **STORAGES,  # noqa: F405
    "attachments": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(DATA_DIR / "test-attachments")},  # noqa: F405
    },
}
