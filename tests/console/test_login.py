"""Login, logout, and the login every console page requires."""

from __future__ import annotations

import pytest
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
