"""Schemathesis against the live OpenAPI document: no 5xx, every response matches the schema."""

from __future__ import annotations

import itertools

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import make_items

TURNS = itertools.count()
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


# Loaded from the running application, as a client would fetch it (no network: in-process WSGI).
# Django's WSGI handler itself, not reviewconsole.wsgi: importing that module sets a worker's
# collector up (reviewconsole/gc_tuning.py), which is no business of the test run's process.
application = get_wsgi_application()
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)


@pytest.fixture
def wsgi_in_test_transaction():
    """Keep Django from closing the test's connection at the end of each in-process request.

    Django's own test Client does the same: close_old_connections would close a connection
    that is inside the test transaction (it looks "unusable" because autocommit is off).
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def robot_with_items(queue, robot_client, wsgi_in_test_transaction):
    """The robot's token and the ids of a few real items in its queue."""
    items = make_items(queue, 5)
    return robot_client[1], [item.pk for item in items]


def aim_at_real_data(case, turn: int, item_ids: list[int]) -> None:
    """Point every other generated case at the real queue and items, so success paths run too.

    Purely random slugs and ids would only ever exercise the 404/422 answers.
    """
    if turn % 2:
        return
    if "slug" in (case.path_parameters or {}):
        case.path_parameters["slug"] = "kyc"
    if "item_id" in (case.path_parameters or {}):
        case.path_parameters["item_id"] = item_ids[turn // 2 % len(item_ids)]
    if isinstance(case.body, dict) and "queue" in case.body:
        case.body["queue"] = "kyc"


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
@pytest.mark.django_db
def test_every_operation_answers_within_its_schema(case, robot_with_items):
    token, item_ids = robot_with_items
    aim_at_real_data(case, next(TURNS), item_ids)
    response = case.call(headers={"Authorization": f"Bearer {token}"})
    case.validate_response(response, checks=CHECKS)


@schema.parametrize()
@settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.django_db
def test_every_operation_refuses_a_missing_token_within_its_schema(case, wsgi_in_test_transaction):
    response = case.call()
    # Schemathesis also probes methods an endpoint does not support (405, in the error shape).
    assert response.status_code in (401, 405)
    case.validate_response(response, checks=CHECKS)
