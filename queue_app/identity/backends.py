"""Password sign-in that PASSWORD_LOGIN=false switches off, on the console and admin logins."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest


class PasswordBackend(ModelBackend):
    """Django's username-and-password backend, refusing every password while switched off."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> Any:
        if not settings.PASSWORD_LOGIN:
            return None
        return super().authenticate(request, *args, **kwargs)
