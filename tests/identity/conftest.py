"""Identity personas: a superuser who administers access, staff who must prove a second factor."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", password="pw-root")


@pytest.fixture
def root_client(root) -> Client:
    """The superuser's session; force_login counts as second-factor verified (tests/conftest.py)."""
    client = Client()
    client.force_login(root)
    return client


@pytest.fixture
def staff(db) -> User:
    """Staff with no device yet, signing in with a password like a person."""
    return User.objects.create_user("sam", password="pw-sam", is_staff=True)


def password_client(user: User, password: str) -> Client:
    """A session made by a real password sign-in (no second factor recorded)."""
    client = Client()
    response = client.post("/accounts/login/", {"username": user.username, "password": password})
    assert response.status_code == 302, response.content
    return client


def current_code(device: TOTPDevice, *, offset: int = 0) -> str:
    """The code an authenticator app would show now (or offset steps away)."""
    import time

    computed = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    computed.time = time.time() + offset * device.step
    return f"{computed.token():0{device.digits}d}"
