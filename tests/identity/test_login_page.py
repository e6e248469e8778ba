"""The login page without single sign-on, and the password switch on both logins."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db


def test_without_sign_on_the_page_shows_the_password_form_only():
    page = Client().get("/accounts/login/").content.decode()
    assert 'id="login-form"' in page and "Sign in with" not in page


def test_with_nothing_enabled_the_page_says_so(settings):
    settings.PASSWORD_LOGIN = False
    page = Client().get("/accounts/login/").content.decode()
    assert "No way to sign in is enabled here" in page


def test_password_login_switched_off_refuses_the_admin_login_too(settings):
    User.objects.create_superuser("root", password="pw-root")
    settings.PASSWORD_LOGIN = False
    client = Client()
    client.post("/admin/login/", {"username": "root", "password": "pw-root"})
    assert "_auth_user_id" not in client.session
    settings.PASSWORD_LOGIN = True
    client.post("/admin/login/", {"username": "root", "password": "pw-root"})
    assert "_auth_user_id" in client.session
