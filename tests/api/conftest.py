"""Fixtures for the JSON API: API clients with tokens, and a caller that speaks exact JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from queue_app.api.auth import issue_api_client
from queue_app.jsonutil import exact_dumps, exact_loads
from queue_app.models import ApiClient, Queue


@dataclass
class Reply:
    status: int
    body: Any
    headers: Any


@dataclass
class Caller:
    """Calls /api/v1/ with a bearer token; bodies in and out go through the exact JSON codec."""

    token: str | None
    http: Client

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _reply(self, response: Any) -> Reply:
        body = exact_loads(response.content) if response.content else None
        return Reply(response.status_code, body, response.headers)

    def get(self, path: str) -> Reply:
        return self._reply(self.http.get(f"/api/v1{path}", headers=self._headers()))

    def send(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None) -> Reply:
        data = raw if raw is not None else (b"" if body is None else exact_dumps(body).encode())
        response = self.http.generic(
            method,
            f"/api/v1{path}",
            data=data,
            content_type="application/json",
            headers=self._headers(),
        )
        return self._reply(response)

    def post(self, path: str, body: Any = None, *, raw: bytes | None = None) -> Reply:
        return self.send("POST", path, body, raw=raw)

    def put(self, path: str, body: Any = None, *, raw: bytes | None = None) -> Reply:
        return self.send("PUT", path, body, raw=raw)


def make_client(
    name: str, queues: list[Queue], *, intake: bool = True, adjudicate: bool = True
) -> tuple[ApiClient, str]:
    """Create an API client limited to the queues; return it with its plain token."""
    return issue_api_client(
        name=name, can_intake=intake, can_adjudicate=adjudicate, queues=list(queues)
    )


def caller_for(token: str | None) -> Caller:
    return Caller(token=token, http=Client())


def intake_body(queue: str = "kyc", key: str = "upstream-1", **fields: Any) -> dict[str, Any]:
    """A valid intake request body; fields override."""
    return {
        "queue": queue,
        "subject": "Payment 42",
        "priority": 0,
        "payload": {"amount": "12.50", "match_decision": "MATCHED"},
        "idempotency_key": key,
        "source_hash": "sha-1",
        **fields,
    }


@pytest.fixture
def robot_client(queue) -> tuple[ApiClient, str]:
    """An API client with both scopes on the kyc queue."""
    return make_client("robot", [queue])


@pytest.fixture
def api(robot_client) -> Caller:
    """A caller authenticated as the robot client."""
    return caller_for(robot_client[1])


@pytest.fixture
def anonymous() -> Caller:
    return caller_for(None)
