"""Password sign-in that PASSWORD_LOGIN=false switches off, on the console and admin logins."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

from queue_app.identity.sessions import user_read_with_session
from queue_app.selectors.accounts import user_by_id


def signed_in_user(user_id: Any) -> Any:
    """The user a session names, or None.

    What the backends' get_user does on every signed-in request. The session's own read
    brought the user along when its row names this one (identity/sessions.py); otherwise one
    prepared statement reads it (identity_sql.USER_ROW), without compiling an ORM query each time
    (B8, docs/performance.md). The row and the instance are the same as the ORM's.
    """
    found, user = user_read_with_session(user_id)
    if found:
        return user
    return user_by_id(get_user_model(), user_id)


class PasswordBackend(ModelBackend):
    """Django's username-and-password backend, refusing every password while switched off."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> Any:
        if not settings.PASSWORD_LOGIN:
            return None
        return super().authenticate(request, *args, **kwargs)

    def get_user(self, user_id: Any) -> Any:
        # ModelBackend's rule, the read above: an inactive user is no longer signed in.
        user = signed_in_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
