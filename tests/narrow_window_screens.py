"""Screenshot the item page, /ops/ and the admin item list at 1366 px; not a test.

Not collected by the suite (no test_ prefix). Run it on purpose before and after a change to
how these pages lay out, naming the variant:
    SCREENS=after .venv/bin/python -m pytest tests/narrow_window_screens.py -p no:cacheprovider -q
It writes test-artifacts/1366-{item,ops,admin-list}-<variant>.png from the same demo traffic as
the /ops/ browser test, so two variants show the same data.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queue_app.models import ReviewItem
from tests.ops.test_dashboard_browser import make_demo_traffic

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def _log_in(page, live_server, username: str) -> None:
    client = Client()
    client.force_login(User.objects.get(username=username))
    page.context.clear_cookies()
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def _shoot(page, name: str, *, full_page: bool = True) -> None:
    variant = os.environ.get("SCREENS", "after")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"1366-{name}-{variant}.png"), full_page=full_page)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_take_narrow_window_screenshots(live_server, page):
    make_demo_traffic()
    page.set_viewport_size({"width": 1366, "height": 900})

    _log_in(page, live_server, "admin")
    page.goto(f"{live_server.url}/ops/")
    _shoot(page, "ops")
    page.goto(f"{live_server.url}/admin/queue_app/reviewitem/")
    _shoot(page, "admin-list", full_page=False)

    bob = User.objects.get(username="bob")
    held = ReviewItem.objects.filter(lease_owner=bob, queue__slug="kyc").first()
    _log_in(page, live_server, "bob")
    page.goto(f"{live_server.url}/items/{held.pk}/")
    _shoot(page, "item")
