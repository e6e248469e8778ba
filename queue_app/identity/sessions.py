"""Database sessions whose one read brings the signed-in user with the session.

Every signed-in request loads its session, then the user the session names, before anything
else happens: two statements, and on the reviewer's cycle a measurable share of its client and
server CPU (B8, docs/performance.md). The sessions live in queue_app.ReviewSession, Django's
session row with the user's id beside the data, so one prepared statement
(selectors.accounts.session_with_user) reads the session and joins its user.
AuthenticationMiddleware below hands that user to the backends' get_user
(identity/backends.signed_in_user) for the one request that read it; Django's own get_user
still decides, as always, whether the session signs anyone in (the backend, the session's auth
hash, whether the user is active).

Everything else (saving, rotating, expiry, clearing, the cookie and the encoded data) is
Django's database store's own.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, cast

from django.contrib import auth
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthentication
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from queue_app.selectors.accounts import session_with_user

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from queue_app.models import ReviewSession

#: The session store whose read get_user may use, while Django's get_user runs.
_reading: contextvars.ContextVar[Any] = contextvars.ContextVar("session_being_read", default=None)


def _named_user_id(data: dict[str, Any]) -> int | None:
    """The id of the user the session's data signs in, or None."""
    try:
        return int(data[SESSION_KEY])
    except (KeyError, TypeError, ValueError):
        return None


class SessionStore(DatabaseSessionStore):
    def __init__(self, session_key: str | None = None) -> None:
        super().__init__(session_key)
        #: (user id, the user or None) as the session's read found them; None before a read,
        #: or when the row names no user.
        self.user_read: tuple[int, Any] | None = None

    @classmethod
    def get_model_class(cls) -> type[ReviewSession]:
        from queue_app.models import ReviewSession

        return ReviewSession

    def create_model_instance(self, data: dict[str, Any]) -> ReviewSession:
        # self.model is get_model_class()'s ReviewSession; the stubs know only the base class.
        session = cast("ReviewSession", super().create_model_instance(data))
        session.user_id = _named_user_id(data)
        return session

    def _get_session_from_db(self) -> Any:
        session, user = session_with_user(
            self.model, get_user_model(), session_key=self.session_key, now=timezone.now()
        )
        if session is None:
            # As Django's store does: a missing or expired session starts a new one.
            self._session_key = None
            return None
        if session.user_id is not None:
            # No user row (deleted since) is an answer too: nobody to sign in.
            self.user_read = (session.user_id, user)
        return session


def user_read_with_session(user_id: Any) -> tuple[bool, Any]:
    """(True, the user or None) if the session get_user is reading named user_id in its row;
    (False, None) otherwise, and the caller reads the user itself."""
    store = _reading.get()
    read = getattr(store, "user_read", None)
    if read is None or str(read[0]) != str(user_id):
        return False, None
    return True, read[1]


def get_user(request: HttpRequest) -> Any:
    """Django's get_user, given the user its session's read brought along (once a request)."""
    # _cached_user is where Django's own middleware keeps the user; the stubs leave it out.
    if not hasattr(request, "_cached_user"):
        token = _reading.set(request.session)
        try:
            request._cached_user = auth.get_user(request)  # type: ignore[attr-defined]  # see above
        finally:
            _reading.reset(token)
    return request._cached_user  # type: ignore[attr-defined]  # see above


class AuthenticationMiddleware(DjangoAuthentication):
    """Django's AuthenticationMiddleware, its request.user read through get_user above."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        # The lazy object stands in for the user, as in Django's own middleware.
        request.user = cast("User | AnonymousUser", SimpleLazyObject(lambda: get_user(request)))
