"""A database error raised in a middleware, outside any view, gets the friendly 503 as well."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.test import Client

from tests.faults.conftest import assert_friendly_page

pytestmark = pytest.mark.django_db


class _SessionStoreGone:
    """Stands in for a middleware that touches the database on the way out and finds it gone
    (SessionMiddleware saving a modified session, for one)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.get_response(request)
        raise OperationalError("connection to server was lost")


class _Broken:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        raise ValueError("a bug, not an outage")


def _middleware_with(settings, extra: str) -> None:
    # First in the list: outermost, so what it raises never passes any of the app's own.
    settings.MIDDLEWARE = [f"{__name__}.{extra}", *settings.MIDDLEWARE]
    settings.DEBUG = False


def test_a_database_error_in_a_middleware_is_the_friendly_503(settings, alice):
    _middleware_with(settings, "_SessionStoreGone")
    client = Client(raise_request_exception=False)
    client.force_login(alice)

    assert_friendly_page(client.get("/"))
    api = client.get("/api/v1/queues")
    assert api.status_code == 503
    assert json.loads(api.content)["error"]["code"] == "unavailable"


def test_any_other_error_in_a_middleware_is_still_a_plain_500(settings, alice):
    _middleware_with(settings, "_Broken")
    client = Client(raise_request_exception=False)
    response = client.get("/")
    assert response.status_code == 500
    assert "temporarily unavailable" not in response.content.decode()
