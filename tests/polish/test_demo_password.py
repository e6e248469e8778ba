"""seed_demo's password: printed once, and recoverable through DEMO_PASSWORD."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

pytestmark = pytest.mark.django_db

DEMO_USERS = ("admin", "alice", "bob", "carol")


def _seed(monkeypatch, password: str | None) -> str:
    if password is None:
        monkeypatch.delenv("DEMO_PASSWORD", raising=False)
    else:
        monkeypatch.setenv("DEMO_PASSWORD", password)
    out = io.StringIO()
    call_command("seed_demo", items=1, stdout=out)
    return out.getvalue()


def test_it_prints_the_generated_password_once_and_it_works(monkeypatch):
    output = _seed(monkeypatch, None)
    generated = re.search(r"created with password: (\S+)", output).group(1)
    assert all(User.objects.get(username=u).check_password(generated) for u in DEMO_USERS)

    again = _seed(monkeypatch, None)

    assert generated not in again
    assert "Lost it? Run again with DEMO_PASSWORD=" in again
    assert User.objects.get(username="alice").check_password(generated)


def test_demo_password_resets_demo_users_that_already_exist(monkeypatch):
    _seed(monkeypatch, None)

    output = _seed(monkeypatch, "a-new-demo-password")

    assert "password set from DEMO_PASSWORD" in output
    for username in DEMO_USERS:
        assert User.objects.get(username=username).check_password("a-new-demo-password")


def test_it_leaves_other_users_passwords_alone(monkeypatch):
    User.objects.create_user("dana", password="danas-own-password")

    _seed(monkeypatch, "a-new-demo-password")

    assert User.objects.get(username="dana").check_password("danas-own-password")
