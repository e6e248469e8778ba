"""/ops/, /metrics and the decision export read from the replica when one is configured.

A second database alias on the same server stands in for the replica: the test's data is
committed, then a fresh process starts with DATABASE_REPLICA_URL naming the same database, asks
for the pages as a staff user, and reports which alias ran each statement. Everything else
(sessions, the user, any write) stays on the primary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.db import connection

from queue_app.services import claim_next, submit_decision
from reviewconsole.routers import read_alias, replica_reads
from tests.conftest import make_items, shown_hash

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, os, sys
import django
django.setup()
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client
from queue_app.admin.decisions import _export_response
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.plugins.otp_totp.models import TOTPDevice
from queue_app.models import Decision
from queue_app.db.statements import lanes as lanes_sql
from queue_app.db.statements import ops as ops_sql
from queue_app.db.statements import lanes as lanes_sql
from queue_app.db.statements import ops as ops_sql
from reviewconsole.routers import replica_reads

ran = {"default": [], "replica": []}
for alias, seen in ran.items():
    connections[alias].execute_wrappers.append(
        lambda execute, statement, params, many, context, seen=seen: (
            seen.append(statement), execute(statement, params, many, context))[1]
    )
client = Client()
client.force_login(User.objects.get(username="olga"))
# Staff prove a second factor before /ops/: this session has.
session = client.session
session[DEVICE_ID_SESSION_KEY] = TOTPDevice.objects.create(
    user=User.objects.get(username="olga"), name="phone", confirmed=True
).persistent_id
session.save()
for seen in ran.values():
    seen.clear()
pages = [client.get("/ops/").status_code, client.get("/metrics").status_code]
export = b"".join(_export_response(Decision.objects.all(), "jsonl").streaming_content)
with replica_reads():
    User.objects.create_user("written-inside-replica-reads")
def per_alias(test):
    return {alias: sum(map(test, seen)) for alias, seen in ran.items()}

print(json.dumps({
    "pages": pages,
    "exported": export.count(b"\n"),
    "open_work": per_alias(lambda s: ops_sql.OPEN_WORK.strip() in s),
    "lanes": per_alias(lambda s: lanes_sql.LANE_BACKLOG_NAMED.strip() in s),
    "sealing": per_alias(lambda s: ops_sql.SEALING_BACKLOG.strip() in s),
    "decisions": per_alias(lambda s: 'FROM "queue_app_decision"' in s),
    "user_insert": per_alias(lambda s: s.startswith('INSERT INTO "auth_user"')),
}))
"""


def _url(settings_dict: dict, **options: str) -> str:
    host = settings_dict["HOST"]
    user = settings_dict["USER"]
    name = settings_dict["NAME"]
    query = "&".join(f"{k}={quote(v)}" for k, v in options.items())
    if host.startswith("/"):
        return f"postgres://{user}@/{name}?host={quote(host)}" + (f"&{query}" if query else "")
    port = f":{settings_dict['PORT']}" if settings_dict["PORT"] else ""
    return f"postgres://{user}@{host}{port}/{name}" + (f"?{query}" if query else "")


@pytest.mark.django_db(transaction=True)
def test_the_heavy_readers_read_from_the_replica_and_nothing_else_does(queue, alice):
    User.objects.create_user(username="olga", password="pw-olga", is_staff=True, is_superuser=True)
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reviewconsole.settings_test",
        "DATABASE_URL": _url(connection.settings_dict),
        "DATABASE_REPLICA_URL": _url(connection.settings_dict, application_name="rc-replica"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["pages"] == [200, 200]
    assert report["exported"] == 1
    # The dashboard and /metrics each read the open work: on the replica only.
    assert report["open_work"] == {"default": 0, "replica": 2}
    assert report["lanes"] == {"default": 0, "replica": 2}  # the lanes panel and its gauges
    # What waits for the sealer is an alarm about the primary: /metrics reads it there.
    assert report["sealing"] == {"default": 1, "replica": 0}
    assert report["decisions"]["default"] == 0 and report["decisions"]["replica"] >= 1
    # A write inside replica_reads() still goes to the primary.
    assert report["user_insert"] == {"default": 1, "replica": 0}


def test_without_a_replica_every_read_stays_on_the_primary(settings):
    assert "replica" not in settings.DATABASES
    with replica_reads():
        assert read_alias() == "default"
    assert read_alias() == "default"
