"""The apply workers' wake-up: sent after the decision commits, from a transaction of its own.

A NOTIFY inside the decision's transaction would make PostgreSQL hold its cluster-wide notify
lock from that commit until the commit's WAL flush, so decisions in every queue would commit
one at a time (B7 in bench/RESULTS.md measures it). The wake-up follows the
COMMIT in the decision's last round trip (runner.run_together's after_commit). These tests
listen on a connection of their own, with real commits.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import psycopg
import pytest
from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    transaction,
)

from queue_app.db.runner import run_together
from queue_app.db.statements import outbox as outbox_sql
from queue_app.errors import InvalidReason
from queue_app.models import Decision, EffectJob
from queue_app.services import claim_lane_task, claim_next, confirm_check, submit_decision
from tests.conftest import make_items, shown_hash
from tests.lanes.conftest import carol, checked_queue, decide_one, open_task  # noqa: F401
from tests.worker.conftest import database_url, decide

pytestmark = pytest.mark.django_db(transaction=True)

CHANNEL = "queue_app_effect_jobs"


@pytest.fixture
def listener() -> Iterator[psycopg.Connection]:
    """A connection LISTENing on the workers' channel, as run_apply_worker's is."""
    with psycopg.connect(database_url(connection.settings_dict), autocommit=True) as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        yield conn


def _received(listener: psycopg.Connection, timeout: float) -> list[psycopg.Notify]:
    return list(listener.notifies(timeout=timeout, stop_after=1))


def test_a_decision_wakes_the_workers_once_it_has_committed(listener, queue, alice):
    [decision] = decide(queue, alice, 1)
    [note] = _received(listener, timeout=10)
    assert note.channel == CHANNEL
    # What the woken worker will look for is already visible to other connections.
    committed = listener.execute(
        "SELECT count(*) FROM queue_app_effectjob WHERE decision_id = %s", [decision.pk]
    ).fetchone()
    assert committed == (1,)


def test_the_wake_up_is_not_part_of_the_decisions_transaction(listener, queue, alice, monkeypatch):
    # The wake-up rides in the decision's last round trip, after its COMMIT. Its payload here
    # names the transaction that sent it: the decision's own would have an id (the insert
    # assigned one); a transaction of its own, which writes nothing, has none.
    monkeypatch.setattr(
        outbox_sql,
        "WAKE_APPLY_WORKERS",
        "SELECT pg_notify('queue_app_effect_jobs',"
        " coalesce(txid_current_if_assigned()::text, 'none'))",
    )
    [decision] = decide(queue, alice, 1)
    [note] = _received(listener, timeout=10)
    assert note.payload == "none"
    assert EffectJob.objects.filter(decision=decision).exists()


def test_a_decision_that_fails_sends_no_wake_up(listener, queue, alice):
    [item] = make_items(queue, 1)
    claimed = claim_next(queue=queue, reviewer=alice)
    assert claimed is not None and claimed.pk == item.pk
    with pytest.raises(InvalidReason):  # the insert fails: its COMMIT and the wake-up are skipped
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=claimed.lease_token,
            verdict="approve",
            reason_code="no-such-code",
            evidence_hash=shown_hash(claimed),
        )
    assert _received(listener, timeout=1.5) == []
    assert not Decision.objects.filter(item_id=item.pk).exists()


def test_no_trigger_on_the_decision_path_notifies():
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, t.tgname
              FROM pg_trigger AS t
              JOIN pg_class AS c ON c.oid = t.tgrelid
              JOIN pg_proc AS p ON p.oid = t.tgfoid
             WHERE c.relname LIKE 'queue\\_app\\_%%'
               AND (p.prosrc ILIKE '%%pg_notify%%' OR p.prosrc ~* '\\mnotify\\M')
            """
        )
        assert cursor.fetchall() == []


def test_a_confirmed_check_wakes_the_workers(listener, checked_queue, alice, carol):  # noqa: F811
    decision = decide_one(checked_queue, alice)
    # Waiting for its check: nothing to apply. The one-statement decide wakes the workers
    # after its COMMIT all the same (whether it queued a job is known only from its result,
    # managers.close_and_record); a worker so woken finds nothing.
    _received(listener, timeout=1.5)
    assert not EffectJob.objects.filter(decision=decision).exists()
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    assert task is not None and task.pk == open_task(decision).pk
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    assert len(_received(listener, timeout=10)) == 1
    assert EffectJob.objects.filter(decision=decision).exists()


def test_a_failed_wake_up_is_logged_and_the_decision_stands(queue, alice, monkeypatch, caplog):
    # The channel name is empty: pg_notify refuses it, after the decision's COMMIT.
    monkeypatch.setattr(outbox_sql, "WAKE_APPLY_WORKERS", "SELECT pg_notify('', '')")
    with caplog.at_level(logging.ERROR, logger="queue_app"):
        [decision] = decide(queue, alice, 1, prefix="first")
    assert Decision.objects.filter(pk=decision.pk).exists()
    assert EffectJob.objects.filter(decision=decision).exists()
    assert any("after commit failed" in record.getMessage() for record in caplog.records)
    # The connection is still good for the next decision.
    [second] = decide(queue, alice, 1, prefix="second")
    assert second.pk != decision.pk


def test_a_wake_up_waits_for_the_outermost_commit(listener, queue, alice):
    # Inside a caller's transaction the decision cannot commit itself: the wake-up goes when
    # the caller's block commits, never before.
    with transaction.atomic():
        [decision] = decide(queue, alice, 1)
        assert _received(listener, timeout=1.0) == []
    [note] = _received(listener, timeout=10)
    assert note.channel == CHANNEL
    assert EffectJob.objects.filter(decision=decision).exists()


def test_a_commit_that_fails_leaves_later_wake_ups_working(listener, caplog):
    # A COMMIT can fail (a deferred foreign key is checked there), and the server then skips
    # what follows it in the round trip. Had psycopg chosen that run to prepare the wake-up (its
    # prepare_threshold-th), the statement would be prepared in psycopg's books only, and every
    # later wake-up on the connection would fail.
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE wake_parent (id int PRIMARY KEY)")
        cursor.execute(
            "CREATE TEMP TABLE wake_child"
            " (parent_id int REFERENCES wake_parent DEFERRABLE INITIALLY DEFERRED)"
        )
    wake = [(outbox_sql.WAKE_APPLY_WORKERS, {})]

    def write(statement: str) -> None:
        with transaction.atomic():
            run_together([(statement, {})], commit=True, after_commit=wake)

    try:
        with caplog.at_level(logging.ERROR, logger="queue_app"):
            for _ in range(connection.connection.prepare_threshold or 0):
                write("SELECT 1")
            list(listener.notifies(timeout=2, stop_after=64))  # drain those wake-ups
            with pytest.raises(IntegrityError):
                write("INSERT INTO wake_child VALUES (1)")  # its COMMIT fails
            write("INSERT INTO wake_parent VALUES (1)")
        assert not any("after commit failed" in r.getMessage() for r in caplog.records)
        assert len(_received(listener, timeout=10)) == 1
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE wake_child, wake_parent")


def test_outside_a_transaction_the_wake_up_follows_only_statements_that_ran(listener):
    wake = [(outbox_sql.WAKE_APPLY_WORKERS, {})]
    with pytest.raises(DatabaseError):
        run_together([("SELECT 1 / 0", {})], after_commit=wake)
    assert _received(listener, timeout=1.0) == []
    run_together([("SELECT 1", {})], after_commit=wake)  # autocommit: at once, after it ran
    assert len(_received(listener, timeout=10)) == 1


def test_a_connection_lost_after_the_commit_is_reported_not_swallowed(listener, caplog):
    # The COMMIT's answer came back; then the server ends the session (what follows it
    # terminates its own backend). The transaction committed, and the caller hears of the lost
    # connection instead of a logged wake-up failure on a connection nothing more can use.
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE wake_lost (id int PRIMARY KEY)")
    try:
        with (
            caplog.at_level(logging.ERROR, logger="queue_app"),
            pytest.raises((OperationalError, InterfaceError)),
            transaction.atomic(),
        ):
            run_together(
                [("INSERT INTO wake_lost VALUES (1)", {})],
                commit=True,
                after_commit=[("SELECT pg_terminate_backend(pg_backend_pid())", {})],
            )
        assert not any("after commit failed" in r.getMessage() for r in caplog.records)
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM wake_lost")
            assert cursor.fetchall() == [(1,)]
    finally:
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE wake_lost")


def test_a_connection_with_its_own_isolation_level_keeps_psycopgs_begin(queue, alice):
    connection.ensure_connection()
    conn = connection.connection
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        with transaction.atomic():
            [(_, [(level,)])] = run_together([("SHOW transaction_isolation", {})], commit=True)
        assert level == "repeatable read"
    finally:
        conn.isolation_level = None
