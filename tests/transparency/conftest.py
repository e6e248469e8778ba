"""A stand-in Transparency Database on a loopback port, and a raw HTTP caller for it."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from queue_app.transparency.standin import StandIn

TOKEN = "tdb-test-token-1f3a"
TOKEN_ENV = "REVIEW_TEST_TDB_TOKEN"


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with StandIn(token=TOKEN) as server:
        yield server


def call(
    standin: StandIn | str,
    method: str,
    path: str,
    payload: Any = None,
    *,
    token: str | None = TOKEN,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, str], Any]:
    """Send one request as a platform would; return status, headers and the decoded JSON body."""
    parts = urlsplit(standin if isinstance(standin, str) else standin.base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    sent = {"Accept": "application/json", "Content-Type": "application/json"}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    body = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
    try:
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            json.loads(data) if data else None,
        )
    finally:
        connection.close()
