"""Fixtures for faults: a database that refuses connections, for as long as a test needs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.db import connection

from queue_app.error_middleware import UNAVAILABLE

NO_SUCH_DATABASE = "reviewconsole_faults_no_such_database"


@pytest.fixture
def database_down() -> Callable[[], Iterator[None]]:
    """Return a context manager under which every new connection is really refused."""

    @contextmanager
    def down() -> Iterator[None]:
        # The server refuses a database that does not exist: a genuine failed connection, as
        # in an outage, without stopping the server other tests share.
        original = connection.settings_dict["NAME"]
        connection.close()
        connection.settings_dict["NAME"] = NO_SUCH_DATABASE
        try:
            yield
        finally:
            connection.close()
            connection.settings_dict["NAME"] = original

    return down


def assert_friendly_page(response) -> None:
    """Assert a person got the 503 page: the words, no traceback, a hint to retry."""
    body = response.content.decode()
    assert response.status_code == 503, body[:500]
    assert response["Content-Type"].startswith("text/html")
    assert UNAVAILABLE in body
    assert "Traceback" not in body and "OperationalError" not in body
    assert response["Retry-After"]
