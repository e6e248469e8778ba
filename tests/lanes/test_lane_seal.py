"""Second-person outcomes in the sealed log: sealed with the decisions, verified with them, and
anchored by the same checkpoint.

The attacks are carried out for real, with the append-only triggers switched off the way an
owner of the database could.
"""

from __future__ import annotations

import importlib
import json
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from queue_app import chain_checkpoints
from queue_app.chain import (
    inclusion_proof,
    root_from_path,
    seal_all,
    seal_pending,
    verify_chain,
)
from queue_app.models import (
    ChainBatch,
    ChainEntry,
    LaneOutcome,
    LaneOutcomeEntry,
    UnsealedLaneOutcome,
)
from queue_app.services import claim_lane_task, confirm_check
from tests.conftest import run_in_threads, triggers_off
from tests.lanes.conftest import bulk_checks, confirm_one
from tests.test_checkpoint import reseal_everything, verify, write_checkpoint

pytestmark = pytest.mark.django_db

seal_migration = importlib.import_module("queue_app.migrations.0020_seal_lane_outcomes")


def as_owner(statement: str, params: list) -> None:
    """Run a statement with every trigger of the log's tables off, foreign keys' too (an owner
    who is a superuser can, and a careful forger keeps the fence's key consistent anyway)."""
    tables = (
        "queue_app_laneoutcome",
        "queue_app_lanetask",
        "queue_app_laneoutcomeentry",
        "queue_app_chainbatch",
    )
    with triggers_off(*tables, foreign_keys=True) as cursor:
        cursor.execute(statement, params)


def test_an_outcome_is_sealed_after_the_decisions_of_its_batch(checked_queue, alice, carol):
    outcome = confirm_one(checked_queue, alice, carol)
    assert UnsealedLaneOutcome.objects.filter(outcome=outcome).exists()

    assert seal_all() == 2  # the maker's decision and the checker's confirmation
    batch = ChainBatch.objects.get()
    entry = LaneOutcomeEntry.objects.get(outcome=outcome)
    assert (batch.size, entry.batch_id, entry.position) == (2, batch.seq, 1)
    assert ChainEntry.objects.get(decision_id=outcome.task.decision_id).position == 0
    assert not UnsealedLaneOutcome.objects.exists()
    result = verify_chain()
    assert result.ok, result.message
    assert "1 decisions and 1 second-person outcomes intact" in result.message


def test_a_decisions_inclusion_proof_covers_the_outcomes_in_its_batch(
    checked_queue, alice, bob, carol
):
    first = confirm_one(checked_queue, alice, carol)
    second = confirm_one(checked_queue, bob, carol)
    seal_all()
    batch = ChainBatch.objects.get()
    assert batch.size == 4 and batch.outcome_entries.count() == 2
    for decision_id in (first.task.decision_id, second.task.decision_id):
        proof = inclusion_proof(decision_id)
        root = root_from_path(
            bytes.fromhex(proof["leaf"]),
            proof["index"],
            proof["size"],
            [bytes.fromhex(h) for h in proof["path"]],
        )
        assert root.hex() == batch.merkle_root


def test_a_full_batch_takes_decisions_first_and_outcomes_in_the_room_left(
    checked_queue, alice, bob, carol
):
    # Two confirmed checks: two decisions and two outcomes wait for the sealer.
    first = confirm_one(checked_queue, alice, carol)
    second = confirm_one(checked_queue, bob, carol)
    assert seal_pending(limit=1) == 1  # the oldest decision alone
    assert seal_pending(limit=2) == 2  # the other decision, then the oldest outcome
    assert seal_pending(limit=5) == 1  # what is left
    assert seal_pending(limit=5) == 0
    one, two, three = ChainBatch.objects.order_by("seq")
    assert [e.decision_id for e in one.entries.all()] == [first.task.decision_id]
    assert [e.decision_id for e in two.entries.all()] == [second.task.decision_id]
    assert [(e.outcome_id, e.position) for e in two.outcome_entries.all()] == [(first.pk, 1)]
    assert [(e.outcome_id, e.position) for e in three.outcome_entries.all()] == [(second.pk, 0)]
    assert not three.entries.exists()
    result = verify_chain()
    assert result.ok, result.message


def test_a_round_full_of_decisions_keeps_a_tenth_for_the_outcomes_waiting(
    checked_queue, alice, carol
):
    confirmed = confirm_one(checked_queue, alice, carol)  # one decision and its outcome
    bulk_checks(checked_queue, alice, 12)  # twelve more decisions, all after it
    assert seal_pending(limit=10) == 10
    [batch] = ChainBatch.objects.all()
    assert batch.entries.count() == 9  # the oldest nine decisions
    assert [e.outcome_id for e in batch.outcome_entries.all()] == [confirmed.pk]
    # With no outcome waiting, the decisions have the whole round.
    assert seal_pending(limit=10) == 4
    result = verify_chain()
    assert result.ok, result.message


@pytest.mark.parametrize(
    "rewrite",
    [
        # Someone else confirmed it.
        "UPDATE queue_app_laneoutcome SET actor_id = %(other)s, actor_username = 'bob' "
        "WHERE task_id = %(task)s",
        # The check was of another decision.
        "UPDATE queue_app_lanetask SET maker_id = %(other)s WHERE id = %(task)s",
        # A different time.
        "UPDATE queue_app_laneoutcome SET created_at = created_at - interval '1 day' "
        "WHERE task_id = %(task)s",
    ],
    ids=["actor", "task's maker", "time"],
)
def test_a_rewritten_outcome_breaks_the_chain_at_it(checked_queue, alice, bob, carol, rewrite):
    outcome = confirm_one(checked_queue, alice, carol)
    seal_all()
    as_owner(rewrite, {"other": bob.pk, "task": outcome.pk})
    result = verify_chain()
    assert not result.ok
    assert f"second-person outcome of lane task {outcome.pk} (sealed batch 1)" in result.message
    assert "altered outside the application" in result.message


def test_a_removed_outcome_breaks_its_batch(checked_queue, alice, carol):
    outcome = confirm_one(checked_queue, alice, carol)
    seal_all()
    as_owner("DELETE FROM queue_app_laneoutcomeentry WHERE outcome_id = %s", [outcome.pk])
    result = verify_chain()
    assert not result.ok
    assert "outcomes were removed" in result.message


def test_an_outcome_taken_off_the_sealers_list_is_reported(checked_queue, alice, carol):
    outcome = confirm_one(checked_queue, alice, carol)
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM queue_app_unsealedlaneoutcome WHERE outcome_id = %s", [outcome.pk]
        )
    result = verify_chain()
    assert not result.ok
    assert f"lane task {outcome.pk}: it is neither sealed nor waiting" in result.message


def test_an_unsealed_outcome_is_accounted_for(checked_queue, alice, carol):
    confirm_one(checked_queue, alice, carol)
    assert verify_chain().ok


def test_outcome_entries_are_append_only(checked_queue, alice, carol):
    confirm_one(checked_queue, alice, carol)
    seal_all()
    with connection.cursor() as cursor:
        # TRUNCATE refuses to run while the test's own inserts have foreign-key checks pending.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for statement in (
        "UPDATE queue_app_laneoutcomeentry SET position = 0",
        "UPDATE queue_app_laneoutcomeentry SET leaf = repeat('0', 64)",
        "DELETE FROM queue_app_laneoutcomeentry",
        "TRUNCATE queue_app_laneoutcomeentry",
    ):
        with (
            pytest.raises(Exception, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)


def test_the_migration_queues_the_outcomes_recorded_before_it(checked_queue, alice, bob, carol):
    sealed = confirm_one(checked_queue, alice, carol)
    seal_all()
    older = confirm_one(checked_queue, bob, carol)
    # As before 0020: no trigger had queued it.
    UnsealedLaneOutcome.objects.filter(outcome=older).delete()

    with connection.cursor() as cursor:
        cursor.execute(seal_migration.QUEUE_EXISTING_OUTCOMES)
        cursor.execute(seal_migration.QUEUE_EXISTING_OUTCOMES)  # and once more: no duplicate

    assert list(UnsealedLaneOutcome.objects.values_list("outcome_id", flat=True)) == [older.pk]
    assert not UnsealedLaneOutcome.objects.filter(outcome=sealed).exists()
    assert seal_all() == 2  # the second maker's decision and the older outcome
    assert verify_chain().ok


def test_a_checkpoint_catches_an_outcome_rewritten_with_every_hash_recomputed(
    checked_queue, alice, bob, carol, settings, tmp_path
):
    private, public = chain_checkpoints.generate_key()
    settings.REVIEW_CHECKPOINT_KEY = private
    settings.REVIEW_CHECKPOINT_PUBLIC_KEY = public
    settings.REVIEW_CHECKPOINT_DIR = tmp_path / "checkpoints"
    settings.REVIEW_CHECKPOINT_WEBHOOK = ""
    outcome = confirm_one(checked_queue, alice, carol)
    path = write_checkpoint(tmp_path)  # seals the decision and the confirmation first
    assert LaneOutcomeEntry.objects.filter(outcome=outcome).exists()

    as_owner(
        "UPDATE queue_app_laneoutcome SET actor_id = %(other)s, actor_username = 'bob' "
        "WHERE task_id = %(task)s",
        {"other": bob.pk, "task": outcome.pk},
    )
    assert not verify_chain().ok
    reseal_everything()
    # Every leaf, root and batch hash agrees with the forged row: the chain alone is fooled.
    assert verify_chain().ok
    with pytest.raises(CommandError, match="Rewritten"):
        verify(path)


def test_a_sealed_outcome_has_an_inclusion_proof(checked_queue, alice, bob, carol):
    outcomes = [confirm_one(checked_queue, maker, carol) for maker in (alice, bob)]
    with pytest.raises(CommandError, match=f"Lane task {outcomes[0].pk} has no sealed outcome"):
        call_command("seal_decisions", "--prove-outcome", str(outcomes[0].pk))
    seal_all()
    out = StringIO()
    call_command("seal_decisions", "--prove-outcome", str(outcomes[0].pk), stdout=out)
    proof = json.loads(out.getvalue())
    root = root_from_path(
        bytes.fromhex(proof["leaf"]),
        proof["index"],
        proof["size"],
        [bytes.fromhex(h) for h in proof["path"]],
    )
    assert (proof["lane_task_id"], proof["index"], proof["size"]) == (outcomes[0].pk, 2, 4)
    assert root.hex() == proof["root"] == ChainBatch.objects.get().merkle_root
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT queue_app_laneoutcome_leaf(o) FROM queue_app_laneoutcome AS o "
            "WHERE task_id = %s",
            [outcomes[0].pk],
        )
        assert cursor.fetchone()[0] == proof["leaf"]
    with pytest.raises(CommandError, match="not allowed with argument"):
        call_command("seal_decisions", "--prove", "1", "--prove-outcome", str(outcomes[0].pk))


@pytest.mark.django_db(transaction=True)
def test_outcomes_confirmed_while_sealers_run_are_each_sealed_once(
    checked_queue, alice, reviewers_group
):
    bulk_checks(checked_queue, alice, 60)
    checkers = [User.objects.create_user(f"checker{i}") for i in range(4)]
    for user in checkers:
        user.groups.add(reviewers_group)

    def work(i: int) -> int:
        me, done = checkers[i], 0
        while (task := claim_lane_task(queue=checked_queue, kind="check", user=me)) is not None:
            confirm_check(task_id=task.pk, user=me, lease_token=task.lease_token)
            done += 1
            if done % 4 == i % 4:
                seal_pending()  # sealers racing the checkers and each other
        return done

    assert sum(run_in_threads(4, work)) == 60
    seal_all()
    assert LaneOutcomeEntry.objects.count() == LaneOutcome.objects.count() == 60
    assert not UnsealedLaneOutcome.objects.exists()
    # Each batch's positions are its decisions' and then its outcomes', without a gap.
    for batch in ChainBatch.objects.all():
        positions = sorted(
            [
                *batch.entries.values_list("position", flat=True),
                *batch.outcome_entries.values_list("position", flat=True),
            ]
        )
        assert positions == list(range(batch.size))
    result = verify_chain()
    assert result.ok, result.message
    assert "60 decisions and 60 second-person outcomes intact" in result.message


def test_the_migration_refuses_to_be_reversed_once_an_outcome_is_sealed(
    checked_queue, alice, carol
):
    with connection.cursor() as cursor:
        cursor.execute(seal_migration.REFUSE_IF_SEALED)  # nothing sealed: it may go back
    confirm_one(checked_queue, alice, carol)
    seal_all()
    with (
        pytest.raises(Exception, match="cannot be reversed"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(seal_migration.REFUSE_IF_SEALED)
