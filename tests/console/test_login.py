"""Login, logout, and the login every console page requires."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/"),
        ("get", "/items/1/"),
        ("post", "/queues/kyc/next/"),
        ("post", "/items/1/decide/"),
        ("post", "/items/1/release/"),
        ("post", "/items/1/renew/"),
    ],
)
def test_it_sends_anonymous_visitors_to_the_login_page(client: Client, queue, method, path):
    response = getattr(client, method)(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_it_logs_in_and_lands_on_my_queues(client: Client, alice, queue):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b"Review Console" in page.content
    assert b"admin/css/login.css" in page.content

    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_it_rejects_a_wrong_password_with_clear_words(client: Client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_it_logs_out_with_a_post(alice_client: Client):
    response = alice_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert alice_client.get("/").status_code == 302


def test_the_session_cookie_is_http_only(client: Client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.cookies["sessionid"]["httponly"] is True


def test_every_post_needs_a_csrf_token(alice, queue):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post("/queues/kyc/next/").status_code == 403
    assert not queue.items.filter(state="leased").exists()


# -- credentials no account can have ----------------------------------------------------------

WRONG = b"correct username and password"  # the console says "a", the admin "the"
ODD_CREDENTIALS = {
    "a username of 151 characters": ("a" * 151, "pw"),
    "a username past axes' 255-character column": ("a" * 256, "pw"),
    "a username of 10,000 characters": ("é" * 10_000, "pw"),
    "a NUL in the username": ("alice\x00", "pw-alice"),
    "a NUL in the password": ("alice", "pw-\x00alice"),
    "a password of a million characters": ("alice", "p" * 1_000_000),
}


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
@pytest.mark.parametrize(
    ("username", "password"), ODD_CREDENTIALS.values(), ids=ODD_CREDENTIALS.keys()
)
def test_odd_credentials_get_the_usual_answer_and_count(
    client: Client, alice, path, username, password
):
    response = client.post(path, {"username": username, "password": password})
    assert response.status_code == 200
    assert WRONG in response.content
    assert b"Null characters" not in response.content
    assert "_auth_user_id" not in client.session
    (attempt,) = AccessAttempt.objects.all()
    assert attempt.failures_since_start == 1
    assert len(attempt.username) <= 150 and "\x00" not in attempt.username


def test_a_username_longer_than_any_account_never_reaches_authentication(
    client: Client, alice, monkeypatch
):
    asked = []
    original = ModelBackend.authenticate

    def spy(self, request, username=None, password=None, **kwargs):
        asked.append(username)
        return original(self, request, username=username, password=password, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", spy)
    client.post("/accounts/login/", {"username": "b" * 151, "password": "pw"})
    client.post("/accounts/login/", {"username": "b" * 150, "password": "pw"})
    assert asked == ["b" * 150]


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_odd_usernames_are_throttled_like_any_other(client: Client, path):
    username = "x" * 300 + "\x00"
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post(path, {"username": username, "password": "guess"})
        assert response.status_code == 200
        assert WRONG in response.content
    response = client.post(path, {"username": username, "password": "guess"})
    assert response.status_code == 429
    assert client.post(path, {"username": username, "password": "guess"}).status_code == 429


def test_bytes_that_are_not_utf8_get_the_usual_answer(client: Client, alice):
    response = client.post(
        "/accounts/login/",
        data=b"username=%FF%FEalice&password=%C0%80pw",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert WRONG in response.content
