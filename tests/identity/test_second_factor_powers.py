"""The second factor is bound to powers, not paths: every route, walked as a holder of a staff
power signed in with a password alone, is refused until a second factor is proved, save a small
list of routes that exercise no power (each with its reason)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from queue_app.identity.mfa import holds_staff_power
from tests.identity.conftest import password_client
from tests.security.routes import POST_ROUTES, PUT_ROUTES, Route, all_routes

pytestmark = pytest.mark.django_db

MFA = "/accounts/mfa/"

#: Routes a password-only session of a power holder may reach, and why each exercises no power.
#: Keep it small: a route missing from here must send such a session to the second factor.
OPEN_ROUTES = {
    "login": "signing in is how a second factor is reached",
    "logout": "signing out takes power away",
    "password_change": "the person's own password, asked for the old one",
    "password_change_done": "a confirmation page, no act",
    "mfa-verify": "the gate's own page: proving the second factor",
    "mfa-setup": "the gate's own page: enrolling a second factor",
    "oidc_authentication_init": "signing in through the provider",
    "oidc_authentication_callback": "signing in through the provider",
    "oidc_logout": "signing out",
    "admin:login": "the admin's sign-in page",
    "admin:logout": "signing out",
    "ops:metrics": "figures for a scraper, behind its own bearer token",
    "ops:healthz": "a load balancer's probe, no data",
}
#: The API authenticates by bearer token, never by session: an API client's powers are its
#: scopes (intake, adjudicate), granted in the admin, which is behind the gate.
OPEN_NAMESPACES = {"api:": "bearer tokens, not sessions; no staff power is an API scope"}
#: The API's unnamed catch-all (a JSON 404 for unknown paths).
OPEN_PATTERNS = {"api/v1/^(?P<path>.*)$": "the API's JSON 404 for paths it does not have"}


def _is_open(route: Route) -> bool:
    return (
        route.key in OPEN_ROUTES
        or route.pattern in OPEN_PATTERNS
        or route.key.startswith(tuple(OPEN_NAMESPACES))
    )


def _request(route: Route) -> tuple[str, str]:
    path = "/" + re.sub(r"<[^>]+>|\(\?P<\w+>[^)]*\)", "1", route.pattern).replace("^", "")
    path = path.replace("$", "").replace(".*", "x")
    if route.key in PUT_ROUTES:
        return "put", path
    writes = route.key in POST_ROUTES or path.endswith(("/retry/", "/overturn/"))
    return ("post" if writes else "get"), path


def _not_sent_to_the_second_factor(client: Client) -> dict[str, int | str]:
    wrong: dict[str, int | str] = {}
    for route in all_routes():
        if _is_open(route):
            continue
        method, path = _request(route)
        response = getattr(client, method)(path)
        location = response.get("Location", "")
        if response.status_code != 302 or not location.startswith(MFA + "?next="):
            wrong[f"{method.upper()} {path} ({route.key})"] = response.status_code
    return wrong


@pytest.fixture
def overturners() -> Group:
    group = Group.objects.create(name="overturners")
    group.permissions.add(Permission.objects.get(codename="can_overturn"))
    return group


@pytest.fixture
def group_overturner(overturners: Group) -> User:
    """Not staff: holds can_overturn only through a group."""
    user = User.objects.create_user("gil", password="pw-gil")
    user.groups.add(overturners)
    return user


def test_it_counts_staff_superusers_and_any_permission_through_groups_as_powers(
    group_overturner, staff, alice
):
    assert holds_staff_power(staff) and holds_staff_power(group_overturner)
    assert not holds_staff_power(alice)
    alice.user_permissions.add(Permission.objects.get(codename="change_effectjob"))
    assert holds_staff_power(User.objects.get(pk=alice.pk))


def test_it_sends_a_password_only_staff_member_from_every_power_route(staff):
    staff.user_permissions.set(Permission.objects.all())
    wrong = _not_sent_to_the_second_factor(password_client(staff, "pw-sam"))
    assert not wrong, wrong


def test_it_sends_a_group_overturner_who_is_not_staff_from_every_power_route(group_overturner):
    wrong = _not_sent_to_the_second_factor(password_client(group_overturner, "pw-gil"))
    assert not wrong, wrong


def test_it_refuses_an_adjudication_to_a_password_only_session(group_overturner, staff):
    for user, password in ((group_overturner, "pw-gil"), (staff, "pw-sam")):
        client = password_client(user, password)
        response = client.post("/lanes/1/adjudicate/", {"outcome": "overturn"})
        assert response.status_code == 302
        assert response["Location"].startswith(MFA + "?next=")


def test_the_walk_covers_the_lanes_the_console_ops_and_the_admin():
    keys = {route.key for route in all_routes() if not _is_open(route)}
    assert {"lane-adjudicate", "lane-next", "lane-task", "ops:dashboard"} <= keys
    assert {"ops:retry_dead_job", "item-decide", "home", "access-history"} <= keys
    assert len(keys) > 100


def test_every_open_route_still_exists():
    keys = {route.key for route in all_routes()}
    patterns = {route.pattern for route in all_routes()}
    assert set(OPEN_ROUTES) <= keys
    assert set(OPEN_PATTERNS) <= patterns


def test_a_reviewer_without_powers_is_not_asked(alice):
    client = password_client(alice, "pw-alice")
    assert client.get("/").status_code == 200
