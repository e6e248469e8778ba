"""Idle session expiry without a database write on every request.

SESSION_SAVE_EVERY_REQUEST would push the expiry forward on each request, at the price of a
session write (three queries) on every page, heartbeat and API-free POST. This pushes it at most
once per SESSION_REFRESH_SECONDS instead: the idle limit is kept to within that margin.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone


class IdleSessionMiddleware:
    """Extend a used session's expiry to SESSION_COOKIE_AGE from now, at most once a minute."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        # Only sessions this request used and that hold something (a login): an anonymous
        # visitor gets no session row from this.
        if session is None or not session.accessed:
            return response
        try:
            if session.is_empty():
                return response
            age = settings.SESSION_COOKIE_AGE
            # A session never extended reports the full age, so a fresh login writes nothing
            # more; one extended earlier reports what is left of its stored expiry.
            if session.get_expiry_age() <= age - settings.SESSION_REFRESH_SECONDS:
                # Marks the session modified: SessionMiddleware (outside us) saves it and
                # re-sends the cookie with the new expiry.
                session.set_expiry(timezone.now() + timedelta(seconds=age))
        except DatabaseError:
            # The database is gone (the response already says so with a 503): the expiry can
            # wait for the next request rather than turn that answer into a 500.
            pass
        return response
