"""The API's lag-tolerant reads (GET /api/v1/items?subject_key= and /items/{id}) come from a real
streaming replica while it is fresh, and from the primary when it lags beyond
REVIEW_API_REPLICA_MAX_LAG_SECONDS, is stopped, stops in the middle of a read, does not have
the item yet, or the client asks for the primary; leases and decisions never touch it.

Which server answered is read from the statements each Django connection ran and from the
response's X-Review-Read-From header; where the replica's answer differs from the primary's
(a paused replay), the body says so too.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections
from django.test import Client

from queue_app.api.replica_reads import READ_FROM_HEADER
from queue_app.db.statements import items as items_sql
from tests.api.conftest import intake_body, make_client
from tests.replication.cluster import Replication
from tests.worker.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SUBJECT = "cust-7"
# The statement's text as fetch_dicts sends it; enough of it to tell it from any other.
SUBJECT_HISTORY = items_sql.SUBJECT_HISTORY.strip()[:200]
ITEM_READ = 'FROM "queue_app_reviewitem"'


class Api:
    """An API client's calls, with the read header when asked for."""

    def __init__(self, token: str) -> None:
        self.token, self.http = token, Client()

    def get(self, path: str, read_from: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"}
        if read_from is not None:
            headers[READ_FROM_HEADER] = read_from
        return self.http.get(f"/api/v1{path}", headers=headers)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self.http.post(
            f"/api/v1{path}",
            data=body,
            content_type="application/json",
            headers={"Authorization": f"Bearer {self.token}"},
        )


def _clear(ran: dict[str, list[str]]) -> None:
    for statements in ran.values():
        statements.clear()


def _listed(api: Api, **kwargs: Any) -> tuple[str, list[int]]:
    reply = api.get(f"/items?subject_key={SUBJECT}", **kwargs)
    assert reply.status_code == 200, reply.content
    return reply.headers[READ_FROM_HEADER], [row["id"] for row in reply.json()["items"]]


def _state(api: Api, item_id: int, **kwargs: Any) -> tuple[str, str]:
    reply = api.get(f"/items/{item_id}", **kwargs)
    assert reply.status_code == 200, reply.content
    return reply.headers[READ_FROM_HEADER], reply.json()["state"]


def _ran_on(ran: dict[str, list[str]], text: str) -> dict[str, int]:
    return {alias: sum(text in sql for sql in statements) for alias, statements in ran.items()}


def _create(api: Api, key: str) -> int:
    reply = api.post("/items", intake_body(key=key, subject_key=SUBJECT))
    assert reply.status_code == 201, reply.content
    return int(reply.json()["id"])


def _lease_and_decide(api: Api) -> int:
    [entry] = api.post("/queues/kyc/leases", {"batch_size": 1}).json()["items"]
    decided = api.post(
        f"/items/{entry['id']}/decision",
        {
            "lease_token": entry["lease_token"],
            "verdict": "approve",
            "reason_code": "verified",
            "evidence_hash": entry["evidence_hash"],
        },
    )
    assert decided.status_code == 201, decided.content
    return int(entry["id"])


def _receive_ahead_of_replay(replicated: Replication) -> bool:
    with replicated.standby.connect() as standby:
        row = standby.execute(
            "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()"
        ).fetchone()
    return bool(row and row[0])


def test_api_reads_use_a_fresh_replica_and_the_primary_when_it_lags_or_is_asked_for(
    replicated: Replication, ran, queue, settings
):
    _, token = make_client("upstream", [queue])
    api = Api(token)
    first, second = _create(api, "k-1"), _create(api, "k-2")
    wait_until(replicated.caught_up, timeout=30, what="the standby to replay the intake")

    # Fresh: the list and the item come from the standby; the token from the primary.
    _clear(ran)
    assert _listed(api) == ("replica", [second, first])
    assert _ran_on(ran, SUBJECT_HISTORY) == {"default": 0, "replica": 1}
    assert _ran_on(ran, 'FROM "queue_app_apiclient"') == {"default": 1, "replica": 0}
    _clear(ran)
    assert _state(api, first) == ("replica", "pending")
    assert _ran_on(ran, ITEM_READ) == {"default": 0, "replica": 1}
    # Asked for the primary: the replica is not even asked how far behind it is.
    _clear(ran)
    assert _state(api, first, read_from="primary") == ("primary", "pending")
    assert _listed(api, read_from="primary") == ("primary", [second, first])
    assert ran["replica"] == []

    # Leases and decisions read their own writes: the replica takes no part.
    _clear(ran)
    decided = _lease_and_decide(api)
    assert ran["replica"] == []
    assert ran["default"]

    # Replay paused, a decision and a new item on the primary only.
    wait_until(replicated.caught_up, timeout=30, what="the standby to replay the decision")
    with replicated.standby.connect() as standby:
        standby.execute("SELECT pg_wal_replay_pause()")
    try:
        still_pending = second if decided == first else first
        _lease_and_decide(api)
        newest = _create(api, "k-3")
        wait_until(
            lambda: _receive_ahead_of_replay(replicated),
            timeout=30,
            what="the standby to receive WAL it does not replay",
        )
        # Within a generous bound the standby answers, as stale as it is.
        settings.REVIEW_API_REPLICA_MAX_LAG_SECONDS = 3600
        assert _state(api, still_pending) == ("replica", "pending")
        assert _listed(api) == ("replica", [second, first])
        # An item too new for it is looked up again on the primary: never a false 404.
        _clear(ran)
        assert _state(api, newest) == ("primary", "pending")
        looked_up = _ran_on(ran, ITEM_READ)
        assert looked_up["replica"] == 1 and looked_up["default"] >= 1
        # The client who must see its own write asks for the primary.
        assert _state(api, still_pending, read_from="primary") == ("primary", "decided")
        # Further behind than the bound: the primary answers, and is up to date.
        settings.REVIEW_API_REPLICA_MAX_LAG_SECONDS = 0
        _clear(ran)
        assert _state(api, still_pending) == ("primary", "decided")
        assert _listed(api) == ("primary", [newest, second, first])
        assert _ran_on(ran, SUBJECT_HISTORY) == {"default": 1, "replica": 0}
        assert _ran_on(ran, ITEM_READ)["replica"] == 0
    finally:
        with replicated.standby.connect() as standby:
            standby.execute("SELECT pg_wal_replay_resume()")
    wait_until(replicated.caught_up, timeout=30, what="the standby to resume")
    assert _listed(api) == ("replica", [newest, second, first])  # caught up: 0 s behind


def test_api_reads_fall_back_to_the_primary_when_the_replica_stops(
    replicated: Replication, ran, queue
):
    _, token = make_client("upstream", [queue])
    api = Api(token)
    first = _create(api, "k-1")
    wait_until(replicated.caught_up, timeout=30, what="the standby to replay the intake")
    assert _listed(api) == ("replica", [first])

    # The standby stops in the middle of a read: after the router found it fresh, as the
    # subject list's statement is sent. That request still answers, from the primary.
    stopped: list[bool] = []

    def stop_first(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if SUBJECT_HISTORY in sql and not stopped:
            replicated.standby.stop(mode="immediate")
            stopped.append(True)
        return execute(sql, params, many, context)

    connections["replica"].execute_wrappers.append(stop_first)
    try:
        _clear(ran)
        assert _listed(api) == ("primary", [first])
        assert stopped == [True]
        assert _ran_on(ran, SUBJECT_HISTORY) == {"default": 1, "replica": 1}
        connections["replica"].execute_wrappers.remove(stop_first)

        # Stopped: every read is the primary's, the item as well as the list.
        second = _create(api, "k-2")
        _clear(ran)
        assert _listed(api) == ("primary", [second, first])
        assert _state(api, second) == ("primary", "pending")
        assert ran["replica"] == []
    finally:
        if stop_first in connections["replica"].execute_wrappers:
            connections["replica"].execute_wrappers.remove(stop_first)
        replicated.standby.start()

    # Back and caught up: the replica serves again.
    wait_until(replicated.caught_up, timeout=30, what="the restarted standby to catch up")
    _clear(ran)
    assert _state(api, second) == ("replica", "pending")
    assert _ran_on(ran, ITEM_READ) == {"default": 0, "replica": 1}
