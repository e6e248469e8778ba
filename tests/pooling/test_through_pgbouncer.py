"""The console, the API and the apply worker through a real PgBouncer in transaction mode.

A representative slice of each suite, run with every connection of the test (and of the worker
it starts) going through PgBouncer (tests/pooling/conftest.py), so a server connection is lent
for one transaction at a time. Each test checks that its transactions really went through the
pooler (its SHOW STATS), then what the suite it stands for checks: a claim, a decision, a stale
token refused, API intake + lease + decide, and the worker applying each decision exactly once.
"""

from __future__ import annotations

import signal
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import Client

from queue_app.models import Decision, EffectJob, ReviewItem
from queue_app.services import claim_next, release_lease
from tests.api.conftest import caller_for, intake_body, make_client
from tests.conftest import make_items, run_in_threads, shown_hash
from tests.pooling.conftest import PgBouncer, start_pgbouncer, stop_pgbouncer
from tests.worker.conftest import database_url, decide, ledger_counts, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form(item: ReviewItem, token: Any) -> dict[str, str]:
    return {
        "lease_token": str(token),
        "evidence_hash": shown_hash(item),
        "queue": str(item.queue_id),
        "verdict": "approve",
        "reason_code": "verified",
        "note": "",
    }


def _server_port() -> str:
    # Where the test's own connection goes: PgBouncer's port while through_pooler holds.
    return connection.settings_dict["PORT"]


def test_a_reviewer_claims_and_decides_through_the_pooler(through_pooler: PgBouncer, alice, queue):
    database = connection.settings_dict["NAME"]
    assert _server_port() == str(through_pooler.port)
    before = through_pooler.transactions(database)
    first, second = make_items(queue, 2)
    client = _signed_in(alice)
    opened = client.post("/queues/kyc/next/")
    assert opened.status_code == 302 and opened["Location"] == f"/items/{first.pk}/"
    first.refresh_from_db()
    decided = client.post(f"/items/{first.pk}/decide/", _form(first, first.lease_token))
    assert decided.status_code == 302 and decided["Location"] == f"/items/{second.pk}/"
    decision = Decision.objects.get()
    assert (decision.item_id, decision.reviewer_id, decision.verdict) == (
        first.pk,
        alice.pk,
        "approve",
    )
    assert EffectJob.objects.filter(decision=decision).exists()
    assert through_pooler.transactions(database) > before


def test_a_stale_token_is_refused_through_the_pooler(through_pooler: PgBouncer, alice, queue):
    [item] = make_items(queue, 1)
    client = _signed_in(alice)
    client.post("/queues/kyc/next/")
    item.refresh_from_db()
    old_token = item.lease_token
    release_lease(item_id=item.pk, reviewer=alice, lease_token=old_token)
    again = claim_next(queue=queue, reviewer=alice)
    assert again.pk == item.pk and again.lease_token != old_token
    refused = client.post(f"/items/{item.pk}/decide/", _form(item, old_token), follow=True)
    assert refused.status_code == 200
    assert not Decision.objects.exists()
    assert "newer lease" in refused.content.decode()


def test_concurrent_claims_through_three_server_connections_never_share_an_item(
    through_pooler: PgBouncer, queue, reviewers_group
):
    from django.contrib.auth.models import User

    people = []
    for i in range(8):
        person = User.objects.create_user(username=f"r{i}", password="x")
        person.groups.add(reviewers_group)
        people.append(person)
    make_items(queue, 8)
    database = connection.settings_dict["NAME"]
    before = through_pooler.transactions(database)
    claimed = run_in_threads(8, lambda i: claim_next(queue=queue, reviewer=people[i]).pk)
    assert len(set(claimed)) == 8
    assert through_pooler.transactions(database) >= before + 8


def test_api_intake_lease_and_decide_through_the_pooler(through_pooler: PgBouncer, queue):
    database = connection.settings_dict["NAME"]
    before = through_pooler.transactions(database)
    _, token = make_client("robot", [queue])
    api = caller_for(token)
    created = api.post("/items", intake_body(key="through-pgbouncer"))
    assert created.status == 201, created.body
    leased = api.post("/queues/kyc/leases", {"batch_size": 5}).body["items"]
    assert [entry["id"] for entry in leased] == [created.body["id"]]
    entry = leased[0]
    body = {
        "lease_token": entry["lease_token"],
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": entry["evidence_hash"],
    }
    reply = api.post(f"/items/{entry['id']}/decision", body)
    assert reply.status == 201, reply.body
    assert Decision.objects.get().pk == reply.body["id"]
    # A retry of the same completion finds the decision, through another server connection
    # or the same: the answer rests on committed rows, not on the session.
    assert api.post(f"/items/{entry['id']}/decision", body).status == 200
    assert through_pooler.transactions(database) > before


def test_the_worker_applies_each_decision_exactly_once_through_the_pooler(
    through_pooler: PgBouncer, ledger_queue, alice, spawn_worker, worker_env
):
    database = connection.settings_dict["NAME"]
    env = worker_env(
        connection.settings_dict,
        REVIEW_TRANSACTION_POOLER="true",
        REVIEW_PREPARED_STATEMENTS="false",
        DATABASE_DIRECT_URL=database_url(through_pooler.direct),
    )
    # A poll interval longer than the wait below: the decisions made while the worker idles are
    # found because the NOTIFY reached its LISTEN on the direct connection.
    worker = spawn_worker("--poll-interval", "60", "--batch-size", "5", env=env)
    wait_until(
        lambda: "apply worker started" in worker.output(), timeout=60, what="the worker to start"
    )
    wait_until(lambda: _listening(through_pooler.direct), timeout=30, what="the worker's LISTEN")
    # ... on PostgreSQL itself: PgBouncer would lend the LISTEN's server connection to others
    # once the statement ended, and the worker would hear nothing.
    clients = {c["application_name"] for c in through_pooler.admin("SHOW CLIENTS")}
    assert "review-console-apply-listen" not in clients
    before = through_pooler.transactions(database)
    decisions = decide(ledger_queue, alice, 12)
    wait_until(
        lambda: len(ledger_counts()) == 12, timeout=45, what="the worker to apply 12 decisions"
    )
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0, worker.output()[-3000:]
    assert ledger_counts() == {d.pk: 1 for d in decisions}
    assert not EffectJob.objects.filter(done_at__isnull=True).exists()
    assert through_pooler.transactions(database) > before
    assert "prepared statement" not in worker.output()


def _listening(settings_dict: dict[str, Any]) -> bool:
    with psycopg.connect(database_url(settings_dict), autocommit=True) as direct:
        row = direct.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE application_name = 'review-console-apply-listen' AND query LIKE 'LISTEN%%'"
        ).fetchone()
    return bool(row and row[0])


def test_this_pgbouncer_cannot_carry_prepared_statements_so_they_are_off(pgbouncer: PgBouncer):
    """Debian's PgBouncer predates protocol-level prepared statements (1.21): a statement one
    client prepared lives on a server connection another client then gets. Two clients on one
    server connection, each preparing its first statement (psycopg names both _pg3_0), collide.
    Hence REVIEW_PREPARED_STATEMENTS=false behind it (docs/scaling.md)."""
    assert pgbouncer.version < (1, 21), (
        f"PgBouncer {pgbouncer.version} can track prepared statements (max_prepared_statements):"
        " docs/scaling.md and this test should now say to keep REVIEW_PREPARED_STATEMENTS on"
    )
    one_server, proc = start_pgbouncer(pgbouncer.direct, pool_size=1)
    try:
        params = {
            "host": one_server.host,
            "port": one_server.port,
            "dbname": connection.settings_dict["NAME"],
            "user": one_server.user,
            "password": one_server.password or None,
            "autocommit": True,
        }
        with (
            psycopg.connect(**params, prepare_threshold=0) as first,
            psycopg.connect(**params, prepare_threshold=0) as second,
        ):
            assert first.execute("SELECT 1").fetchone() == (1,)
            with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
                second.execute("SELECT 2")
        # Unprepared, as Django's connections are with REVIEW_PREPARED_STATEMENTS off, the same
        # two clients share the one server connection without a conflict.
        with (
            psycopg.connect(**params, prepare_threshold=None) as first,
            psycopg.connect(**params, prepare_threshold=None) as second,
        ):
            for _ in range(10):
                assert first.execute("SELECT 1").fetchone() == (1,)
                assert second.execute("SELECT 2").fetchone() == (2,)
    finally:
        stop_pgbouncer(proc, one_server.folder)
