"""The per-request health check (Django's CONN_HEALTH_CHECKS): a connection the server ended is
replaced before the request uses it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.postgresql.base import DatabaseWrapper

from tests.worker.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def web_connection() -> Iterator[DatabaseWrapper]:
    """A connection of its own, as a web worker holds one across requests."""
    db = connections.create_connection(DEFAULT_DB_ALIAS)
    db.ensure_connection()
    assert isinstance(db, DatabaseWrapper) and db.health_check_enabled
    try:
        yield db
    finally:
        db.close()


def _serve_request(db: DatabaseWrapper) -> int:
    """What one request does to the connection: Django's checks around one query."""
    db.close_if_unusable_or_obsolete()  # request_started
    with db.cursor() as cursor:  # the first query runs the health check
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    db.close_if_unusable_or_obsolete()  # request_finished
    return pid


def _count_round_trip_checks(db: DatabaseWrapper, monkeypatch) -> list[bool]:
    asked: list[bool] = []
    original = db.is_usable

    def is_usable() -> bool:
        asked.append(True)
        return original()

    monkeypatch.setattr(db, "is_usable", is_usable)
    return asked


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    wait_until(lambda: not _backend_alive(pid), timeout=10)


def _backend_alive(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone() is not None


def test_each_request_that_reuses_a_connection_asks_the_server(web_connection, monkeypatch):
    _serve_request(web_connection)
    asked = _count_round_trip_checks(web_connection, monkeypatch)

    _serve_request(web_connection)
    _serve_request(web_connection)
    assert asked == [True, True]


def test_a_connection_the_server_ended_is_replaced_before_the_request_uses_it(web_connection):
    # A restart, a failover or pg_terminate_backend between two requests: the next request
    # runs on a new connection instead of failing on the dead one.
    old = _serve_request(web_connection)
    _terminate(old)

    new = _serve_request(web_connection)
    assert new != old
    assert _backend_alive(new)


def test_a_connection_closed_under_django_is_replaced(web_connection):
    old = _serve_request(web_connection)
    web_connection.connection.close()  # psycopg's, behind Django's back

    new = _serve_request(web_connection)
    assert new != old
