"""claim_next and submit_decision commit inside their last round trip; nothing half-written.

These run as the outermost transaction with real commits (transaction=True), the path where
runner.run_together sends the COMMIT with the statements. The tests in a test transaction
cover the other path, where the atomic block ends with a savepoint release as usual.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import DatabaseError, DataError, connection, transaction

from queue_app.db.runner import run_together
from queue_app.errors import EvidenceChanged, InvalidReason, NotPermitted
from queue_app.models import Decision, EffectJob, EvidenceRule, ItemEvent, ReviewItem
from queue_app.services import claim_next, submit_decision
from tests.conftest import approve_as_shown, make_items, shown_hash

pytestmark = pytest.mark.django_db(transaction=True)


def _in_another_connection(sql: str, params: list) -> list[tuple]:
    """Read what is committed, from a connection of its own."""
    import psycopg

    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        password=settings["PASSWORD"] or None,
        autocommit=True,
    ) as other:
        return other.execute(sql, params).fetchall()


def test_a_claim_is_committed_when_claim_next_returns(queue, alice):
    make_items(queue, 3)
    item = claim_next(queue=queue, reviewer=alice)
    assert not connection.in_atomic_block
    assert _in_another_connection(
        "SELECT state, lease_owner_id, lease_token FROM queue_app_reviewitem WHERE id = %s",
        [item.pk],
    ) == [("leased", alice.pk, item.lease_token)]


def test_next_item_for_a_reviewer_without_access_writes_nothing(queue, alice, outsider):
    make_items(queue, 3)
    held = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(NotPermitted):
        claim_next(queue=queue, reviewer=outsider)
    leased = ReviewItem.objects.filter(state="leased")
    assert list(leased.values_list("pk", "lease_owner_id")) == [(held.pk, alice.pk)]
    assert not ItemEvent.objects.filter(actor=outsider).exists()


def test_a_reviewer_who_lost_access_does_not_get_their_lease_renewed(queue, alice):
    make_items(queue, 3)
    item = claim_next(queue=queue, reviewer=alice)
    alice.groups.clear()
    with pytest.raises(NotPermitted):
        claim_next(queue=queue, reviewer=alice)
    after = ReviewItem.objects.get(pk=item.pk)
    assert after.lease_expires == item.lease_expires
    assert ReviewItem.objects.filter(state="leased").count() == 1


def test_an_invalid_reason_fails_the_committing_round_trip_and_leaves_the_lease(queue, alice):
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    # Retired codes and another verdict's codes are outside the set as much as a made-up one.
    queue.reason_codes.filter(code="verified").update(retired_at="2026-01-01T00:00:00Z")
    for verdict, code in (
        ("approve", "no-such-code"),
        ("approve", "verified"),
        ("reject", "within_tolerance"),
    ):
        with pytest.raises(InvalidReason):
            submit_decision(
                item_id=item.pk,
                reviewer=alice,
                lease_token=item.lease_token,
                verdict=verdict,
                reason_code=code,
                evidence_hash=shown_hash(item),
            )
        # The close rolled back with the failed insert: still leased to alice, same token.
        assert _in_another_connection(
            "SELECT state, lease_token FROM queue_app_reviewitem WHERE id = %s", [item.pk]
        ) == [("leased", item.lease_token)]
    assert not Decision.objects.exists()
    assert not EffectJob.objects.exists()

    reason = queue.reason_codes.filter(verdict="approve", retired_at__isnull=True).first()
    decision = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code=reason.code,
        evidence_hash=shown_hash(item),
    )
    assert _in_another_connection(
        "SELECT d.reason_code_id, i.state FROM queue_app_decision d "
        "JOIN queue_app_reviewitem i ON i.id = d.item_id WHERE d.id = %s",
        [decision.pk],
    ) == [(reason.pk, "decided")]
    assert EffectJob.objects.filter(decision=decision).count() == 1


def _command(command) -> bytes | None:
    """A queued command as the test reads it: the query text (a prepared statement's name),
    b"Sync" for a sync, None for the Parse that prepares a statement before its run (psycopg
    adds one the time a connection reaches prepare_threshold runs of a statement)."""
    if not getattr(command, "args", None):
        return b"Sync"
    if command.func.__name__ == "send_prepare":
        return None
    return command.args[0]


def _round_trips(monkeypatch) -> list[list[bytes]]:
    """Record the commands psycopg's pipelines send, split into round trips: the client waits
    for the server at each Sync, and only there."""
    from psycopg import _pipeline_base

    trips: list[list[bytes]] = [[]]
    communicate = _pipeline_base.pipeline_communicate

    def recording(pgconn, commands):
        for command in filter(None, map(_command, commands)):
            trips[-1].append(command)
            if command == b"Sync":
                trips.append([])
        return (yield from communicate(pgconn, commands))

    monkeypatch.setattr(_pipeline_base, "pipeline_communicate", recording)
    return trips


@pytest.fixture
def notices() -> list[str]:
    """What the server says to Django's connection as notices (warnings included)."""
    connection.ensure_connection()
    said: list[str] = []

    def handler(diag) -> None:
        said.append(diag.message_primary or "")

    connection.connection.add_notice_handler(handler)
    yield said
    connection.connection.remove_notice_handler(handler)


def test_a_claim_is_one_round_trip_with_its_begin_and_commit(queue, alice, monkeypatch, notices):
    # Outside autocommit psycopg sends its own BEGIN before a pipeline's first statement, with
    # a Sync of its own: a round trip. run_together sends BEGIN, the statements, COMMIT and one
    # Sync (psycopg_internals.transaction_as_written).
    make_items(queue, 2)
    connection.ensure_connection()
    trips = _round_trips(monkeypatch)
    item = claim_next(queue=queue, reviewer=alice)
    assert item is not None
    [write, _] = trips
    # BEGIN, the guard, the renew, the claim, COMMIT and the Sync.
    assert len(write) == 6
    assert (write[0], write[-2], write[-1]) == (b"BEGIN", b"COMMIT", b"Sync")
    assert notices == []  # no "there is already a transaction in progress"


def test_a_decision_is_one_round_trip_and_wakes_the_workers_in_it(
    queue, alice, monkeypatch, notices
):
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    assert item.evidence_hash is not None  # stored at intake (evidence.arrival_evidence_hash)
    trips = _round_trips(monkeypatch)
    decision = approve_as_shown(item, alice, queue_id=item.queue_id)  # no read of the item first
    # BEGIN, the timeouts, the close and insert, COMMIT, the wake-up (its arrival:
    # tests/worker/test_wake_up.py) and the Sync.
    [write, _] = trips
    assert (len(write), write[0], write[-3], write[-1]) == (6, b"BEGIN", b"COMMIT", b"Sync")
    assert notices == []
    # Nothing was left for Django's atomic block to commit, or for psycopg to begin again.
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert _in_another_connection(
        "SELECT i.state, d.evidence_hash FROM queue_app_decision d "
        "JOIN queue_app_reviewitem i ON i.id = d.item_id WHERE d.id = %s",
        [decision.pk],
    ) == [("decided", shown_hash(item))]


@pytest.mark.parametrize(
    ("rule_value", "warnings_seen"), [(None, False), ("-1", True), ("1000", False), ("-1", None)]
)
def test_a_console_decision_is_one_round_trip_with_or_without_evidence_rules(
    queue, alice, monkeypatch, notices, rule_value, warnings_seen
):
    # The console's decide says whether the reviewer ticked "I have read the warnings"; the
    # rules are judged in the statement (queue_app_evidence_warnings), so a queue with rules
    # decides in one round trip whether they warn and were ticked ("-1": every item's n is
    # above it) or do not warn ("1000"), and so does a caller that shows none (None, the API).
    if rule_value is not None:
        EvidenceRule.objects.create(
            queue=queue, path="n", test="above", value=rule_value, message="n"
        )
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    trips = _round_trips(monkeypatch)
    approve_as_shown(item, alice, queue_id=item.queue_id, warnings_seen=warnings_seen)
    [write, _] = trips
    assert (len(write), write[0], write[-3], write[-1]) == (6, b"BEGIN", b"COMMIT", b"Sync")
    assert notices == []


def test_without_a_stored_hash_a_decision_is_refused_after_one_round_trip_and_a_read(
    queue, alice, monkeypatch, notices
):
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    ReviewItem.objects.filter(pk=item.pk).update(evidence_hash=None)
    trips = _round_trips(monkeypatch)
    with pytest.raises(EvidenceChanged):
        approve_as_shown(item, alice, queue_id=item.queue_id)
    # The one statement wrote nothing and committed; the explanation is one read after it,
    # outside any pipeline.
    [tried, _] = trips
    assert (len(tried), tried[-3]) == (6, b"COMMIT")
    assert notices == []
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert not Decision.objects.filter(item_id=item.pk).exists()
    assert not EffectJob.objects.exists()


def test_a_failing_statement_rolls_back_a_transaction_the_round_trip_began(queue, alice):
    make_items(queue, 1)
    with pytest.raises(DatabaseError), transaction.atomic():
        run_together(
            [
                ("UPDATE queue_app_reviewitem SET priority = 7", {}),
                ("SELECT 1 / 0", {}),
            ],
            commit=True,
        )
    assert list(ReviewItem.objects.values_list("priority", flat=True)) == [0]
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_statements_inside_a_savepoint_are_not_committed_by_the_round_trip(queue, alice):
    make_items(queue, 1)
    with pytest.raises(RuntimeError), transaction.atomic():
        with transaction.atomic():
            run_together([("UPDATE queue_app_reviewitem SET priority = 7", {})], commit=True)
        assert _in_another_connection("SELECT priority FROM queue_app_reviewitem", []) == [(0,)]
        raise RuntimeError("the outer block rolls back")
    assert list(ReviewItem.objects.values_list("priority", flat=True)) == [0]


@pytest.mark.parametrize("after", [0, 1, 400])
def test_a_failing_statement_raises_its_own_error_however_many_follow_it(after):
    # psycopg reads results while it is still sending the round trip's statements. When the
    # failing one's result comes back in that loop and the aborts of those after it come later,
    # psycopg raises the aborts ("pipeline aborted") in place of the statement's own error
    # (which is how an invalid reason code was once reported as an OperationalError). Many
    # statements after the failing one make that order all but certain.
    with pytest.raises(DataError, match="division by zero"), transaction.atomic():
        run_together([("SELECT 1 / 0", {}), *[("SELECT 1", {})] * after], commit=True)
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
