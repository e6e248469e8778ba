"""/ops/, /metrics and the decision export read from a real streaming replica, and from the
primary when the replica is down or further behind than REVIEW_REPLICA_MAX_LAG_SECONDS.

The replica is a hot standby of a primary the tests start (tests/replication/cluster.py):
rows written on the primary reach it by streaming replication, and stopping it (pg_ctl) is
stopping a real server. Which server answered is read from the statements each Django
connection ran.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queue_app.admin.decisions import _export_response
from queue_app.db.statements import ops as ops_sql
from queue_app.models import Decision
from queue_app.services import claim_next, submit_decision
from tests.conftest import make_items, shown_hash
from tests.replication.cluster import Replication
from tests.worker.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _decide_two(queue: Any, reviewer: User, prefix: str = "item") -> None:
    make_items(queue, 2, prefix=prefix)
    for _ in range(2):
        item = claim_next(queue=queue, reviewer=reviewer)
        submit_decision(
            item_id=item.pk,
            reviewer=reviewer,
            lease_token=item.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(item),
        )


def _operator() -> Client:
    olga = User.objects.create_user(username="olga", password="pw", is_staff=True)
    client = Client()
    client.force_login(olga)
    return client


def _open_work_on(ran: dict[str, list[str]]) -> dict[str, int]:
    return {
        alias: sum(ops_sql.OPEN_WORK.strip() in sql for sql in statements)
        for alias, statements in ran.items()
    }


def _exported() -> int:
    return b"".join(_export_response(Decision.objects.all(), "jsonl").streaming_content).count(
        b"\n"
    )


def _clear(ran: dict[str, list[str]]) -> None:
    for statements in ran.values():
        statements.clear()


def test_ops_and_export_read_the_replica_and_fall_back_when_it_stops(
    replicated: Replication, ran, queue, alice
):
    _decide_two(queue, alice)
    client = _operator()
    wait_until(replicated.caught_up, timeout=30, what="the standby to replay the decisions")

    # Streaming: the dashboard's aggregates and the export come from the standby.
    _clear(ran)
    page = client.get("/ops/")
    assert page.status_code == 200
    assert _open_work_on(ran) == {"default": 0, "replica": 1}
    html = page.content.decode()
    assert 'data-figure="replica-state">Replica up' in html
    assert 'id="standbys-table"' in html  # the primary's pg_stat_replication, with its lag
    _clear(ran)
    assert _exported() == 2
    assert any('FROM "queue_app_decision"' in sql for sql in ran["replica"])
    assert not any('FROM "queue_app_decision"' in sql for sql in ran["default"])

    # The standby stops mid-run (its Django connection still open): the same page and export
    # answer from the primary, and the page says why.
    replicated.standby.stop(mode="immediate")
    try:
        _clear(ran)
        page = client.get("/ops/")
        assert page.status_code == 200
        assert _open_work_on(ran) == {"default": 1, "replica": 0}
        html = page.content.decode()
        assert 'data-figure="replica-state">Replica unreachable' in html
        assert 'id="standbys-table"' not in html  # the primary sends to no one now
        metrics = client.get("/metrics")
        assert metrics.status_code == 200
        _clear(ran)
        assert _exported() == 2
        assert any('FROM "queue_app_decision"' in sql for sql in ran["default"])
        assert ran["replica"] == []
    finally:
        replicated.standby.start()

    # Back: the next page reads the standby again, once it has caught up.
    _decide_two(queue, alice, prefix="later")
    wait_until(replicated.caught_up, timeout=30, what="the restarted standby to catch up")
    _clear(ran)
    assert client.get("/ops/").status_code == 200
    assert _open_work_on(ran) == {"default": 0, "replica": 1}
    _clear(ran)
    assert _exported() == 4
    assert not any('FROM "queue_app_decision"' in sql for sql in ran["default"])


def _receive_ahead_of_replay(replicated: Replication) -> bool:
    with replicated.standby.connect() as standby:
        row = standby.execute(
            "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()"
        ).fetchone()
    return bool(row and row[0])


def _shown_lag(html: str) -> float:
    found = re.search(r'data-figure="replica-lag">([0-9.]+)<', html)
    assert found, "no replica lag on the page"
    return float(found.group(1))


def test_a_replica_further_behind_than_the_bound_is_passed_over_and_its_lag_shown(
    replicated: Replication, ran, queue, alice, settings
):
    client = _operator()
    wait_until(replicated.caught_up, timeout=30, what="the standby to replay the set-up")
    with replicated.standby.connect() as standby:
        standby.execute("SELECT pg_wal_replay_pause()")
    try:
        _decide_two(queue, alice)
        wait_until(
            lambda: _receive_ahead_of_replay(replicated),
            timeout=30,
            what="the standby to receive WAL it does not replay",
        )
        # Within a generous bound the paused standby still serves, and its lag is shown.
        settings.REVIEW_REPLICA_MAX_LAG_SECONDS = 3600
        _clear(ran)
        html = client.get("/ops/").content.decode()
        assert _open_work_on(ran) == {"default": 0, "replica": 1}
        assert 'data-figure="replica-state">Replica up' in html
        assert _shown_lag(html) >= 0
        assert _exported() == 0  # the standby has not replayed the decisions yet
        # Behind more than a bound of 0 s: the primary answers, and the page says so.
        settings.REVIEW_REPLICA_MAX_LAG_SECONDS = 0
        _clear(ran)
        html = client.get("/ops/").content.decode()
        assert _open_work_on(ran) == {"default": 1, "replica": 0}
        assert "more than the bound of 0 s" in html
        assert _shown_lag(html) > 0
        assert _exported() == 2
        # The primary's own view: bytes its standby has still to replay.
        standbys = re.findall(r'data-figure="standby-bytes">(\d+)<', html)
        assert standbys and int(standbys[0]) > 0
    finally:
        with replicated.standby.connect() as standby:
            standby.execute("SELECT pg_wal_replay_resume()")
    wait_until(replicated.caught_up, timeout=30, what="the standby to resume")
    settings.REVIEW_REPLICA_MAX_LAG_SECONDS = 0
    _clear(ran)
    client.get("/ops/")
    assert _open_work_on(ran) == {"default": 0, "replica": 1}  # caught up: 0 s behind
