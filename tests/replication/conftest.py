"""A streaming replica for the tests: a primary and its hot standby (tests/replication/cluster.py)
for the session, and a fixture that points Django's `default` at the primary and a `replica`
alias at the standby for one test, as DATABASE_URL and DATABASE_REPLICA_URL would."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection, connections

from tests.replication.cluster import Replication, start_replication


@pytest.fixture(scope="session")
def replication(django_db_setup: None, django_db_blocker: Any) -> Iterator[Replication]:
    with django_db_blocker.unblock():
        source = dict(connection.settings_dict)
    pair = start_replication(source)
    try:
        yield pair
    finally:
        pair.stop()


@pytest.fixture
def replicated(
    replication: Replication, transactional_db: None, django_db_blocker: Any
) -> Iterator[Replication]:
    """For one test, `default` is the primary and `replica` its standby; afterwards the
    primary's copy is emptied (as the suite's own teardown empties the test database) and the
    test database is `default` again."""
    saved = connection.settings_dict.copy()
    connections.close_all()
    connection.settings_dict.update(replication.primary.settings({}))
    # connections.settings is settings.DATABASES: the router sees the replica too.
    connections.settings["replica"] = {
        **connection.settings_dict,
        **replication.standby.settings({}),
        "OPTIONS": {**connection.settings_dict.get("OPTIONS", {}), "connect_timeout": 2},
    }
    # Django's test case lets a test connect only to the aliases it declared as it began, and
    # `replica` exists only from here on: its connection opens as it would outside the tests.
    replica = connections["replica"]
    replica.ensure_connection = types.MethodType(  # type: ignore[method-assign]
        django_db_blocker._real_ensure_connection, replica
    )
    ContentType.objects.clear_cache()
    try:
        yield replication
    finally:
        connections.close_all()
        del connections.settings["replica"]
        with contextlib.suppress(AttributeError):
            del connections["replica"]
        if replication.primary.pid() is not None:
            call_command("flush", interactive=False, verbosity=0)
        connections.close_all()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        ContentType.objects.clear_cache()


@pytest.fixture
def ran(replicated: Replication) -> Iterator[dict[str, list[str]]]:
    """The statements each alias ran during the test, from when it asks."""
    seen: dict[str, list[str]] = {"default": [], "replica": []}

    def recorder(into: list[str]) -> Any:
        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            into.append(sql)
            return execute(sql, params, many, context)

        return record

    for alias, into in seen.items():
        connections[alias].execute_wrappers.append(recorder(into))
    yield seen
    for alias in seen:
        connections[alias].execute_wrappers.clear()
