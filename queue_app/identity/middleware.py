"""Identity middleware: the author and trace id of access changes, the second-factor gate, and
the single sign-on session re-check."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import pghistory
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from django.utils.http import urlencode
from mozilla_django_oidc.middleware import SessionRefresh

from queue_app.error_middleware import DatabaseUnavailableMiddleware
from queue_app.identity import mfa, oidc

#: Where access can change: the admin, the sign-in pages (group mapping, enrolment), and the
#: provider's callback. Console and API requests never change access, and their statements are
#: left exactly as written (pghistory prefixes each write with the context while it is active).
HISTORY_PREFIXES = ("/admin/", "/accounts/", "/oidc/")
TRACE_HEADER = "X-Request-ID"


def request_trace_id(request: HttpRequest) -> str:
    """Return the request's trace id: the proxy's X-Request-ID when it is a UUID, else a new one."""
    # trace_id is this module's own attribute on the request: the stubs cannot know it.
    if not hasattr(request, "trace_id"):
        given = request.headers.get(TRACE_HEADER, "")
        try:
            request.trace_id = str(uuid.UUID(given))  # type: ignore[attr-defined]
        except ValueError:
            request.trace_id = str(uuid.uuid4())  # type: ignore[attr-defined]
    return request.trace_id  # type: ignore[attr-defined]


class AccessHistoryMiddleware:
    """Attach who (the signed-in user) and which request (trace id) to access changes."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(HISTORY_PREFIXES):
            return self.get_response(request)
        user = request.user if request.user.is_authenticated else None
        context: dict[str, Any] = {
            "user": user.pk if user else None,
            "username": user.get_username() if user else None,
            "trace_id": request_trace_id(request),
            "url": request.path,
        }
        with pghistory.context(**context):
            response = self.get_response(request)
        response[TRACE_HEADER] = request_trace_id(request)
        return response


class RequireSecondFactorMiddleware:
    """Send a user who must prove a second factor, and has not, to enrolment or verification.

    Whoever holds a staff power (mfa.holds_staff_power), on every page but the sign-in ones,
    the API and the machine endpoints; everyone with MFA_REQUIRED_FOR_ALL.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            needs = mfa.is_gated(request.path) and mfa.needs_second_factor(request)
        except (OperationalError, InterfaceError) as exc:
            # The first read of the session and user happens here, outside any view: a lost
            # database gets the same one-line log and friendly 503 a view's error gets.
            return DatabaseUnavailableMiddleware.answer(request, exc)
        if needs:
            target = reverse("mfa-verify")
            return redirect(f"{target}?{urlencode({'next': request.get_full_path()})}")
        return self.get_response(request)


class OidcSessionRefresh(SessionRefresh):
    """mozilla-django-oidc's silent re-check of a provider's session, when sign-on is configured.

    The provider's endpoints come from its discovery document when first needed, so a provider
    that is down when the app starts does not stop it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        MiddlewareMixin.__init__(self, get_response)
        self.OIDC_EXEMPT_URLS = [*mfa.OPEN_PATHS_NAMED, re.compile(r"^/(api|static)/")]
        self.OIDC_STATE_SIZE = 32
        self.OIDC_AUTHENTICATION_CALLBACK_URL = settings.OIDC_AUTHENTICATION_CALLBACK_URL
        self.OIDC_USE_NONCE = settings.OIDC_USE_NONCE
        self.OIDC_NONCE_SIZE = 32

    @staticmethod
    def get_settings(attr: str, *args: Any) -> Any:
        return oidc.setting(attr, *args)

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:
        return settings.OIDC_RP_CLIENT_ID

    @property
    def OIDC_RP_SCOPES(self) -> str:
        return settings.OIDC_RP_SCOPES

    @property
    def OIDC_OP_AUTHORIZATION_ENDPOINT(self) -> str:
        return oidc.setting("OIDC_OP_AUTHORIZATION_ENDPOINT")

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if not oidc.enabled():
            return None
        return super().process_request(request)
