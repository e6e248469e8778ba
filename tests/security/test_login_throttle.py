"""Login throttling (django-axes): too many wrong passwords lock a username+address pair out.

Driven through the real login forms (console and admin), as a person or a script would.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

CONSOLE = "/accounts/login/"
ADMIN = "/admin/login/"


def attempt(
    client: Client, username: str, password: str, *, path: str = CONSOLE, ip: str = "10.0.0.1"
):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


def fail_until_locked(client: Client, username: str, **kwargs) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = attempt(client, username, "wrong", **kwargs)
        assert response.status_code == 200  # the form again, with the usual error
        assert b"correct username and password" in response.content
    response = attempt(client, username, "wrong", **kwargs)
    assert response.status_code == 429


def test_it_locks_out_after_the_failure_limit_with_a_clear_message(client: Client, alice):
    fail_until_locked(client, "alice")
    # Even the right password is refused now, with words saying why and for how long.
    response = attempt(client, "alice", "pw-alice")
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed log-in attempts for “alice”" in page
    assert "paused for 15 minutes" in page
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302


def test_the_lockout_holds_one_username_from_one_address(client: Client, alice, bob):
    fail_until_locked(client, "alice")
    # bob at the same address, and alice from another address, are not locked out.
    assert attempt(Client(), "bob", "pw-bob").status_code == 302
    assert attempt(Client(), "alice", "pw-alice", ip="10.0.0.2").status_code == 302


def test_the_admin_login_is_throttled_too(client: Client, alice):
    fail_until_locked(client, "alice", path=ADMIN)
    response = attempt(client, "alice", "pw-alice", path=ADMIN)
    assert response.status_code == 429
    assert "Too many failed log-in attempts" in response.content.decode()


def test_it_lets_the_user_back_in_after_the_cool_off(client: Client, alice):
    fail_until_locked(client, "alice")
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    response = attempt(client, "alice", "pw-alice")
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_a_successful_login_resets_the_count(client: Client, alice):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "alice", "wrong")
    assert attempt(client, "alice", "pw-alice").status_code == 302
    client.post("/accounts/logout/")
    # A fresh run of failures is needed for a lockout: one more wrong password is not enough.
    assert attempt(client, "alice", "wrong").status_code == 200
    assert attempt(client, "alice", "pw-alice").status_code == 302


def test_the_lockout_page_has_no_inline_script_or_style(client: Client, alice):
    fail_until_locked(client, "alice")
    page = attempt(client, "alice", "pw-alice").content.decode()
    assert "<style" not in page and " style=" not in page
    assert "<script>" not in page
