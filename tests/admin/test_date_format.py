"""One date and time format on every page: the viewer's zone, shown, never a raw datetime.

The site runs in Asia/Tokyo here (no daylight saving, so the abbreviation is always JST): a
page that still printed UTC, or str(datetime), would show it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from queue_app.api.auth import issue_api_client, revoke_api_client
from queue_app.services import claim_next
from tests.admin.conftest import client_for, decide
from tests.conftest import make_items
from tests.ops.conftest import mark_dead

pytestmark = pytest.mark.django_db

# str(datetime) and isoformat(): microseconds, or a numeric offset glued to the time.
RAW = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?(\.\d+|[+-]\d{2}:?\d{2}\b)")
# What people read: ISO 8601 date and time to the second, then the zone (one format everywhere).
SHOWN = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} ([A-Z]{2,5})\b")
# Outside a <time datetime="..."> attribute (the UTC instant, for machines), no bare ISO "T".
MACHINE = re.compile(r'<time datetime="\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z">')
ISO_T = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


@pytest.fixture(autouse=True)
def _tokyo(settings) -> None:
    settings.TIME_ZONE = "Asia/Tokyo"


def _text(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def _assert_consistent(html: str, *, dates_expected: bool = True) -> list[str]:
    assert RAW.search(html) is None, RAW.search(html).group(0)
    assert ISO_T.search(MACHINE.sub("", html)) is None
    assert "a.m." not in html and "p.m." not in html
    zones = [m.group(1) for m in SHOWN.finditer(html)]
    if dates_expected:
        assert zones, "no date shown"
    assert set(zones) <= {"JST"}, zones
    return [m.group(0) for m in SHOWN.finditer(html)]


def _local(moment) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S JST")


def test_the_console_shows_local_times_with_the_zone(queue, alice, bob):
    item, waiting = make_items(queue, 2)
    decision = decide(item, alice)
    claim_next(queue=queue, reviewer=bob)  # bob holds the other: alice sees who and until when

    alice_client = client_for(alice)
    _assert_consistent(_text(alice_client.get(reverse("home"))), dates_expected=False)
    decided_page = _assert_consistent(_text(alice_client.get(reverse("item", args=[item.pk]))))
    assert _local(decision.created_at) in decided_page
    held = _text(alice_client.get(reverse("item", args=[waiting.pk])))
    waiting.refresh_from_db()
    assert _local(waiting.lease_expires) in _assert_consistent(held)


def test_the_admin_shows_local_times_with_the_zone(queue, alice, compliance):
    item, _ = make_items(queue, 2)
    decision = decide(item, alice)
    item.refresh_from_db()
    ledger, _ = issue_api_client(name="ledger", can_intake=True, can_adjudicate=False, queues=[])
    revoke_api_client(client=ledger)
    client = client_for(compliance)

    listed = _assert_consistent(_text(client.get(reverse("admin:queue_app_reviewitem_changelist"))))
    assert _local(item.created_at) in listed
    change = _assert_consistent(
        _text(client.get(reverse("admin:queue_app_reviewitem_change", args=[item.pk])))
    )
    assert _local(decision.created_at) in change
    _assert_consistent(_text(client.get(reverse("admin:queue_app_decision_changelist"))))
    _assert_consistent(
        _text(client.get(reverse("admin:queue_app_decision_change", args=[decision.pk])))
    )
    _assert_consistent(
        _text(client.get(reverse("admin:queue_app_decision_overturn", args=[decision.pk])))
    )
    _assert_consistent(_text(client.get(reverse("admin:queue_app_apiclient_changelist"))))
    _assert_consistent(_text(client.get(reverse("admin:queue_app_effectjob_changelist"))))


def test_ops_labels_hours_and_dead_jobs_in_the_local_zone(queue, alice, root):
    (item,) = make_items(queue, 1)
    decision = decide(item, alice)
    mark_dead(decision, error="webhook answered 503")
    html = _text(client_for(root).get(reverse("ops:dashboard")))
    shown = _assert_consistent(html)
    assert _local(decision.created_at) in shown
    assert "last 24 hours (JST)" in html
    assert "(under a minute ago)" in html and "0\xa0minutes" not in html


def test_the_zone_comes_from_the_environment():
    # The real settings module, in a fresh process: TIME_ZONE is read from the environment.
    script = (
        "import django; django.setup()\n"
        "from datetime import UTC, datetime\n"
        "from queue_app.datetimes import local_text\n"
        "print(local_text(datetime(2026, 11, 30, 15, 20, 8, 746778, tzinfo=UTC)))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reviewconsole.settings", "TIME_ZONE": "CET"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2026-11-30 16:20:08 CET"
