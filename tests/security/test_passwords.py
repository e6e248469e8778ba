"""Django's password validators guard the password-change form; there is no mail-based reset."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


def _change(client: Client, new: str):
    return client.post(
        "/accounts/password_change/",
        {"old_password": "pw-alice", "new_password1": new, "new_password2": new},
    )


@pytest.mark.parametrize(
    ("weak", "reason"),
    [
        ("short1", "too short"),
        ("password123", "too common"),
        ("48213377921", "entirely numeric"),
        ("alice123x", "too similar to the username"),
    ],
)
def test_it_refuses_a_weak_password_and_says_why(alice_client: Client, alice, weak, reason):
    response = _change(alice_client, weak)
    assert response.status_code == 200
    assert reason in response.content.decode()
    assert User.objects.get(pk=alice.pk).check_password("pw-alice")


def test_it_accepts_a_strong_password(alice_client: Client, alice):
    response = _change(alice_client, "correct horse battery staple 42")
    assert response.status_code == 302
    assert User.objects.get(pk=alice.pk).check_password("correct horse battery staple 42")


def test_there_is_no_password_reset_by_mail(client: Client):
    assert client.get("/accounts/password_reset/").status_code == 404
