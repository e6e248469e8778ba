"""Answer a database outage with words and a 503 instead of a 500 and a stack trace; refuse a
NUL in an address with a 400 before it reaches a query.

Views that expect a busy database (the console's lock timeouts, the API's handlers) answer it
themselves; this catches what reaches Django's handler unanswered: the connection refused while
loading the session or the user, a connection that died mid-request. Nothing was written: the
request's transaction rolled back with the connection. Django reconnects by itself on a later
request (CONN_HEALTH_CHECKS), so nothing here needs to remember the outage.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.views import defaults

from queue_app.api.failures import error_response

logger = logging.getLogger("queue_app")

API_PREFIX = "/api/"
UNAVAILABLE = "Review Console is temporarily unavailable… your work is safe, try again in a moment."
API_UNAVAILABLE = "The database is unavailable."  # the words the API's own handler uses
RETRY_AFTER_SECONDS = 5


def unavailable_response(request: HttpRequest) -> HttpResponse:
    """Return the 503 a person (HTML) or an API client (the API's error shape) should see."""
    if request.path.startswith(API_PREFIX):
        response = error_response(request, 503, "unavailable", API_UNAVAILABLE)
    else:
        # Rendered without the request: its context processors would load the session, the
        # user and the messages, all from the database that just failed.
        # A form post cannot be retried by a link; its page can (and the fence makes a
        # resubmitted decision safe anyway).
        retry = request.get_full_path() if request.method in ("GET", "HEAD") else reverse("home")
        context = {"title": "Temporarily unavailable", "message": UNAVAILABLE, "retry": retry}
        response = HttpResponse(render_to_string("503.html", context), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    """Turn OperationalError/InterfaceError escaping a view into a friendly 503."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """Answer a lost or refused database connection; leave every other error to Django."""
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        return self.answer(request, exception)

    @staticmethod
    def answer(request: HttpRequest, exception: Exception) -> HttpResponse:
        """Log a lost database in one line and answer the friendly 503."""
        # One line, no traceback: during an outage every request fails the same way.
        logger.warning(
            "database unavailable; answered 503",
            extra={"path": request.path, "error": str(exception).strip()[:300]},
        )
        return unavailable_response(request)


NUL_REFUSED = "This address contains a NUL character (%00), which nothing here accepts."


class RefuseNulMiddleware:
    """Answer 400 to a path or query string holding a NUL, before any view or session sees it.

    PostgreSQL text cannot hold NUL, and query parameters flow into queries unchecked in many
    places (every admin changelist's filters, lookups and search, including third-party
    admins): one guard here answers them all alike, instead of a DataError (500) in each. The
    API is left to itself: it validates every parameter it reads and documents its 422.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX) and (
            "\x00" in request.path
            or any(
                "\x00" in key or any("\x00" in value for value in values)
                for key, values in request.GET.lists()
            )
        ):
            return HttpResponseBadRequest(NUL_REFUSED, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: the friendly 503 for a database error raised outside any view.

    process_exception above sees only what a view raises. A middleware that reads or writes
    the database (the session saved on the way out, the login throttle) raises where Django
    turns it straight into a 500; Django then calls this inside its except block, so the
    error is still sys.exc_info(). Any other error gets Django's own 500 page.
    """
    exception = sys.exc_info()[1]
    if isinstance(exception, (OperationalError, InterfaceError)):
        logger.warning(
            "database unavailable outside a view; answered 503",
            extra={"path": request.path, "error": str(exception).strip()[:300]},
        )
        return unavailable_response(request)
    return defaults.server_error(request)
