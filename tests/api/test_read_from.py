"""X-Review-Read-From on the API's lag-tolerant reads, with no replica configured: every read is
the primary's and says so; a value other than `primary` or `replica` is refused before any read.
The replica itself: tests/replication/test_api_reads.py."""

from __future__ import annotations

import pytest

from queue_app.api.replica_reads import READ_FROM_HEADER
from tests.api.conftest import caller_for, intake_body, make_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(queue) -> str:
    return make_client("upstream", [queue])[1]


def _get(token: str, path: str, **headers: str):
    return caller_for(token).http.get(
        f"/api/v1{path}", headers={"Authorization": f"Bearer {token}", **headers}
    )


def test_without_a_replica_both_reads_say_primary_and_others_say_nothing(token):
    created = caller_for(token).post("/items", intake_body(subject_key="cust-1"))
    assert created.status == 201
    assert READ_FROM_HEADER not in created.headers
    for path in (f"/items/{created.body['id']}", "/items?subject_key=cust-1"):
        for asked in ({}, {READ_FROM_HEADER: "replica"}, {READ_FROM_HEADER: " Primary "}):
            reply = _get(token, path, **asked)
            assert reply.status_code == 200, reply.content
            assert reply.headers[READ_FROM_HEADER] == "primary"
    # A 404 is read from somewhere too.
    missing = _get(token, "/items/999999")
    assert missing.status_code == 404
    assert missing.headers[READ_FROM_HEADER] == "primary"


def test_an_unknown_read_from_value_is_a_422_naming_the_allowed_ones(token):
    reply = _get(token, "/items?subject_key=cust-1", **{READ_FROM_HEADER: "standby"})
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["code"] == "invalid_read_from"
    assert error["details"] == {"header": READ_FROM_HEADER, "allowed": ["primary", "replica"]}
    assert READ_FROM_HEADER not in reply.headers
