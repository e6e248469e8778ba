"""axe-core on every page we serve: light and dark, phone (390x844) and desktop (1366x768).

The pages come from the URL resolver through tests/a11y/every_page.py: a route without an entry
there fails test_every_route_has_an_entry, so a new page is checked from the day it is added.
The demo is seeded once for the module (tests/demo_site.py: seed_demo and every state a page
can be in) and served by gunicorn with the production settings; each (theme, viewport) has one
browser window, signed in as each page's person by swapping the session cookie. Zero WCAG
2.0/2.1 A and AA violations each (tests/accessibility.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections

from tests.a11y.every_page import Visit, entry_for, visits
from tests.accessibility import assert_accessible
from tests.demo_site import (
    Demo,
    admin_samples,
    cookies_for,
    seed_states,
    serve,
    sessions,
    unverified_session,
)
from tests.security.routes import all_routes

THEMES = ("light", "dark")
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1366, "height": 768}}
PEOPLE = ["alice", "bob", "carol", "admin", "mallory"]


@dataclass
class Site:
    base: str
    demo: Demo
    sessions: dict[str, str]


def test_every_route_has_an_entry():
    missing = [route.key for route in all_routes() if entry_for(route) is None]
    assert not missing, (
        "Routes with no entry in tests/a11y/every_page.py REGISTRY (say how to reach the page, "
        f"or NotAPage and why): {missing}"
    )


def test_every_entry_names_a_route():
    from fnmatch import fnmatchcase

    from tests.a11y.every_page import REGISTRY

    keys = [route.key for route in all_routes()]
    stale = [p for p in REGISTRY if not any(fnmatchcase(key, p) for key in keys)]
    assert not stale, f"REGISTRY entries that match no route any more: {stale}"


def test_the_page_ids_are_unique():
    ids = [
        visit.id
        for route in all_routes()
        if isinstance(entry := entry_for(route), list)
        for visit in entry
    ]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def _lock_out(username: str) -> None:
    """Record enough failed sign-ins for the login page to show the lock-out."""
    from axes.models import AccessAttempt
    from django.conf import settings

    AccessAttempt.objects.create(
        username=username,
        ip_address="127.0.0.1",
        user_agent="",
        get_data="",
        post_data="",
        http_accept="",
        path_info="/accounts/login/",
        failures_since_start=settings.AXES_FAILURE_LIMIT,
    )


def _a_row_for_every_admin_model() -> None:
    """What the demo has no row of: an API client, the stop switch, a chain check, an applied
    decision, a statement of reasons with its policy, mapping and delivery, login records."""
    from django.contrib.auth.models import User

    from queue_app.api.auth import issue_api_client
    from queue_app.apply import apply_one
    from queue_app.models import AutomationSwitch, ChainVerification, Queue
    from tests.security.conftest import _access_rows, _statement_rows

    issue_api_client(name="upstream-kyc", can_intake=True, queues=[Queue.objects.get(slug="kyc")])
    AutomationSwitch.objects.get_or_create(pk=1)
    ChainVerification.objects.create(ok=True, checked=1, message="ok")
    assert apply_one(), "no decision's effect to apply"
    _statement_rows(User.objects.get(username="bob"))
    _access_rows()


@pytest.fixture(scope="module")
def site(django_db_setup: None, django_db_blocker: Any, tmp_path_factory) -> Iterator[Site]:
    """The seeded demo, committed, served by gunicorn; emptied again when the module is done
    (as the suite's transactional tests leave the database)."""
    from django.contrib.auth.models import User

    with django_db_blocker.unblock():
        try:
            demo = seed_states()
            User.objects.create_user("mallory", password="pw-mallory")  # in no queue's group
            keys = sessions(PEOPLE)
            keys["erin"] = unverified_session("erin", enrolled=False)
            keys["frank"] = unverified_session("frank", enrolled=True)
            _lock_out("locked-out")
            _a_row_for_every_admin_model()
            demo.samples = {
                **admin_samples(),
                "user:frank": User.objects.get(username="frank").pk,
                # The demo's own admin first: its change page has the permissions picker.
                "auth.user": User.objects.get(username="admin").pk,
            }
            log = tmp_path_factory.mktemp("a11y-site") / "gunicorn.log"
            with serve(log) as base:
                yield Site(base=base, demo=demo, sessions=keys)
        finally:
            connections.close_all()
            call_command("flush", interactive=False, verbosity=0)
            connections.close_all()


@pytest.fixture(scope="module")
def windows(browser: Any) -> Iterator[Any]:
    """One browser window per (theme, viewport), opened on first use."""
    opened: dict[tuple[str, str], Any] = {}

    def window(theme: str, viewport: str) -> Any:
        if (theme, viewport) not in opened:
            context = browser.new_context(
                viewport=VIEWPORTS[viewport], color_scheme=theme, reduced_motion="reduce"
            )
            context.set_default_timeout(30_000)
            opened[theme, viewport] = context.new_page()
        return opened[theme, viewport]

    yield window
    for page in opened.values():
        page.context.close()


def _serve_rendered(page: Any, url: str, visit: Visit, demo: Demo) -> None:
    response = visit.rendered(demo)  # type: ignore[misc]
    page.route(
        url,
        lambda route: route.fulfill(
            status=response.status_code, headers=dict(response.items()), body=response.content
        ),
    )


# django_db: the marker that has pytest-django create the test database the site is seeded in
# (each test's own transaction is empty: the pages are read by the server, not by the test).
@pytest.mark.browser
@pytest.mark.every_page
@pytest.mark.django_db
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("visit", visits(), ids=lambda visit: visit.id)
def test_no_axe_violations(site: Site, windows: Any, visit: Visit, theme: str, viewport: str):
    page = windows(theme, viewport)
    context = page.context
    context.clear_cookies()
    context.add_cookies(cookies_for(site.base, site.sessions.get(visit.user or "")))
    url = site.base + visit.path(site.demo)
    if visit.rendered is not None:
        _serve_rendered(page, url, visit, site.demo)
    try:
        response = page.goto(url)
    finally:
        if visit.rendered is not None:
            page.unroute(url)
    assert response is not None and response.status == visit.status, (
        f"{visit.id}: {url} answered {response and response.status}, expected {visit.status}"
    )
    if visit.then is not None:
        visit.then(page)
    assert_accessible(page, f"{visit.id} ({theme}, {viewport} {VIEWPORTS[viewport]['width']} px)")


def test_the_list_covers_the_pages_the_issue_names():
    """The pages #47 names stay in the list whatever else changes."""
    ids = {visit.id for visit in visits()}
    for wanted in [
        "home-reviewer-with-a-lease",
        "item-mine",
        "lane-check",
        "lane-qa",
        "lane-adjudication",
        "my-work",
        "ops",
        "login",
        "second-factor-code",
        "second-factor-enrolment",
        "api-docs",
        "admin-index",
        "admin-queue-app-queue-change",
        "admin-queue-app-decision-list",
        "admin-overturn",
        "access-history",
        "admin-queue-app-statementofreasons-change",
        "not-found",
        "unavailable",
    ]:
        assert wanted in ids, wanted
