"""The login forms (console and admin): any credential anyone can post gets the usual answer.

A username no account can have (longer than the username column, or with a NUL character,
which PostgreSQL text cannot hold) and a password with a NUL are not looked up at all: they get
the same "wrong username or password" as any other failure, and count toward django-axes'
throttling like any other, under a username its own columns can store (axes_username).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest
from django.views.decorators.debug import sensitive_variables

# Every account's username fits here (the auth_user column); nothing longer is worth a lookup.
USERNAME_MAX_LENGTH: int = get_user_model()._meta.get_field("username").max_length or 150


def storable_username(typed: str) -> str:
    """Return the typed username in a form axes' columns (255 characters, no NUL) can hold."""
    # U+FFFD: no account's username has one (the username validator allows \w.@+- only).
    text = typed.replace("\x00", "\ufffd")
    if len(text) <= USERNAME_MAX_LENGTH:
        return text
    # Longer than any account's: a prefix and a digest keep distinct guesses distinct.
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[:100]}\u2026{digest}"


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """AXES_USERNAME_CALLABLE: the username axes counts, locks and stores, made storable."""
    if credentials:
        typed = credentials.get("username")
    else:
        typed = getattr(request, "data", request.POST).get("username")
    return None if typed is None else storable_username(str(typed))


class CredentialsMixin:
    """Answer credentials no account can match like a wrong password, and count them."""

    @sensitive_variables()
    def clean(self) -> dict[str, Any]:
        # The ignores below: a mixin of AuthenticationForm, whose attributes these are.
        # The raw posted values: field validation has already refused a NUL, and would have
        # shown its own words ("Null characters are not allowed") instead of the usual ones.
        username = self.data.get("username") or ""  # type: ignore[attr-defined]
        password = self.data.get("password") or ""  # type: ignore[attr-defined]
        unusable = (
            len(username.strip()) > USERNAME_MAX_LENGTH or "\x00" in username or "\x00" in password
        )
        if not (unusable and username.strip() and password):
            return super().clean()  # type: ignore[misc]
        for name in ("username", "password"):
            self._errors.pop(name, None)  # type: ignore[attr-defined]
        # What authenticate() would have sent had it looked the name up: axes counts it (and
        # marks the request locked out at the limit, which its middleware answers with 429).
        user_login_failed.send(
            sender=__name__,
            credentials={"username": username},
            request=self.request,  # type: ignore[attr-defined]
        )
        raise self.get_invalid_login_error()  # type: ignore[attr-defined]


class LoginForm(CredentialsMixin, AuthenticationForm):
    """The console's login form."""


class AdminLoginForm(CredentialsMixin, AdminAuthenticationForm):
    """The admin's login form (staff only, as Django's)."""
