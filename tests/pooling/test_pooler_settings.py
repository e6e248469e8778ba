"""What REVIEW_TRANSACTION_POOLER and the replica lag bounds do to the settings, read
from the production settings module in a fresh process (as a deployment's environment sets
them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.servers import PROJECT_DIR

PROBE = """
import json
from django.conf import settings
default = settings.DATABASES["default"]
print(json.dumps({
    "options": default.get("OPTIONS", {}).get("options"),
    "prepare_threshold": default.get("OPTIONS", {}).get("prepare_threshold"),
    "server_side_cursors_off": default.get("DISABLE_SERVER_SIDE_CURSORS", False),
    "direct": settings.DATABASE_DIRECT_URL,
    "max_lag": settings.REVIEW_REPLICA_MAX_LAG_SECONDS,
    "api_max_lag": settings.REVIEW_API_REPLICA_MAX_LAG_SECONDS,
}))
"""


def _settings(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reviewconsole.settings_test",
        "DATABASE_URL": "postgres://review@127.0.0.1:6432/reviewconsole",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + PROBE],
        cwd=PROJECT_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_behind_a_transaction_pooler_no_session_state_is_asked_for():
    done = _settings(
        REVIEW_TRANSACTION_POOLER="true",
        REVIEW_PREPARED_STATEMENTS="false",
        DATABASE_DIRECT_URL="postgres://review@127.0.0.1:5432/reviewconsole",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pooled = json.loads(done.stdout.strip().splitlines()[-1])
    assert pooled["options"] is None  # PgBouncer refuses the start-up parameter
    assert pooled["prepare_threshold"] is None
    assert pooled["server_side_cursors_off"] is True
    assert pooled["direct"] == "postgres://review@127.0.0.1:5432/reviewconsole"
    # Without the pooler: the session guards ride on the connection, as before.
    done = _settings()
    assert done.returncode == 0, done.stderr[-2000:]
    direct = json.loads(done.stdout.strip().splitlines()[-1])
    assert "idle_in_transaction_session_timeout" in direct["options"]
    assert direct["server_side_cursors_off"] is False
    assert direct["max_lag"] == 30.0
    assert direct["api_max_lag"] == 5.0


def test_a_negative_lag_bound_is_refused_with_what_to_set():
    done = _settings(REVIEW_REPLICA_MAX_LAG_SECONDS="-1")
    assert done.returncode != 0
    assert "REVIEW_REPLICA_MAX_LAG_SECONDS must be 0 or more seconds" in done.stderr


def test_a_negative_api_lag_bound_is_refused_with_what_to_set():
    done = _settings(REVIEW_API_REPLICA_MAX_LAG_SECONDS="-0.5")
    assert done.returncode != 0
    assert "REVIEW_API_REPLICA_MAX_LAG_SECONDS must be 0 or more seconds" in done.stderr
