"""The database's own second-person rules, tested with raw SQL that bypasses the services."""

from __future__ import annotations

import uuid

import pytest
from django.db import DatabaseError, connection, transaction

from queue_app.models import ApiClient, LaneOutcome, LaneTask
from queue_app.services import claim_lane_task, confirm_check
from tests.lanes.conftest import decide_one, open_task

pytestmark = pytest.mark.django_db


def _sql(statement: str, params: list) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement, params)


def _lease_to(task: LaneTask, user_id: int) -> uuid.UUID:
    token = uuid.uuid4()
    _sql(
        "UPDATE queue_app_lanetask SET lease_owner_id = %s, lease_token = %s, "
        "lease_expires = now() + interval '5 minutes' WHERE id = %s",
        [user_id, token, task.pk],
    )
    return token


def _outcome(task: LaneTask, actor_id: int, token: uuid.UUID, result: str = "confirmed") -> None:
    _sql(
        "INSERT INTO queue_app_laneoutcome (task_id, kind, result, actor_id, actor_username, "
        "lease_token, verdict, note, created_at) VALUES (%s, 'check', %s, %s, '', %s, '', 'n', "
        "now())",
        [task.pk, result, actor_id, token],
    )


def test_the_database_refuses_a_maker_leasing_their_own_check(checked_queue, alice):
    task = open_task(decide_one(checked_queue, alice))
    with pytest.raises(DatabaseError, match="second person"):
        _lease_to(task, alice.pk)


def test_the_database_refuses_a_maker_confirming_their_own_check(checked_queue, alice, carol):
    task = open_task(decide_one(checked_queue, alice))
    token = _lease_to(task, carol.pk)
    # Even naming a valid lease, the maker may not write the outcome.
    with pytest.raises(DatabaseError, match="second person"):
        _outcome(task, alice.pk, token)
    assert not LaneOutcome.objects.exists()


def test_the_database_refuses_the_service_user_of_the_makers_client(
    checked_queue, alice, carol, supervisor
):
    robot = type(alice).objects.create_user("robot")
    robot.groups.add(*alice.groups.all())
    ApiClient.objects.create(
        name="bot", user=robot, token_prefix="x", token_hash="z" * 64, created_by=supervisor
    )
    task = open_task(decide_one(checked_queue, robot))
    assert task.maker_principal_id == supervisor.pk
    # The client's creator counts as the maker...
    with pytest.raises(DatabaseError, match="second person"):
        _lease_to(task, supervisor.pk)
    # ...and so does the service user itself.
    with pytest.raises(DatabaseError, match="second person"):
        _lease_to(task, robot.pk)
    _lease_to(task, carol.pk)  # anyone else may


def test_an_outcome_must_name_the_current_lease(checked_queue, alice, carol, bob):
    task = open_task(decide_one(checked_queue, alice))
    token = _lease_to(task, carol.pk)
    with pytest.raises(DatabaseError, match="laneoutcome_fenced_by_lease"):
        _outcome(task, carol.pk, uuid.uuid4())
    with pytest.raises(DatabaseError, match="laneoutcome_fenced_by_lease"):
        _outcome(task, bob.pk, token)


def test_one_outcome_per_task(checked_queue, alice, carol):
    task = open_task(decide_one(checked_queue, alice))
    token = _lease_to(task, carol.pk)
    _outcome(task, carol.pk, token)
    with pytest.raises(DatabaseError, match=r"pkey|duplicate"):
        _outcome(task, carol.pk, token, result="returned")


def test_outcomes_are_append_only(checked_queue, alice, carol):
    decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    for statement in (
        "UPDATE queue_app_laneoutcome SET note = 'edited'",
        "DELETE FROM queue_app_laneoutcome",
        # Django's foreign keys are deferred: fire them first, so TRUNCATE meets the trigger.
        "SET CONSTRAINTS ALL IMMEDIATE; TRUNCATE queue_app_laneoutcome CASCADE",
    ):
        with pytest.raises(DatabaseError, match="append-only"):
            _sql(statement, [])


def test_a_done_task_never_changes_and_no_task_is_deleted(checked_queue, alice, carol, bob):
    decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    with pytest.raises(DatabaseError, match="is done"):
        _sql("UPDATE queue_app_lanetask SET state = 'open', done_at = NULL", [])
    with pytest.raises(DatabaseError, match="append-only"):
        _sql("DELETE FROM queue_app_lanetask", [])


def test_what_a_task_is_about_never_changes(checked_queue, alice, carol):
    first = open_task(decide_one(checked_queue, alice))
    second = decide_one(checked_queue, alice)
    with pytest.raises(DatabaseError, match="never changes"):
        _sql(
            "UPDATE queue_app_lanetask SET maker_principal_id = %s WHERE id = %s",
            [carol.pk, first.pk],
        )
    with pytest.raises(DatabaseError):
        _sql(
            "UPDATE queue_app_lanetask SET decision_id = %s WHERE id = %s",
            [second.pk, first.pk],
        )


def test_a_task_must_name_its_decisions_maker(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice, variance_amount="1")  # no check
    with pytest.raises(DatabaseError, match="lanetask_matches_decision"):
        _sql(
            "INSERT INTO queue_app_lanetask (kind, queue_id, item_id, decision_id, maker_id, "
            "state, lease_count, created_at) VALUES ('check', %s, %s, %s, %s, 'open', 0, now())",
            [checked_queue.pk, decision.item_id, decision.pk, carol.pk],
        )


def test_the_database_refuses_qa_by_the_original_reviewer(queue, alice, carol):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    task = open_task(decide_one(queue, alice), kind="qa")
    with pytest.raises(DatabaseError, match="second person"):
        _lease_to(task, alice.pk)
    token = _lease_to(task, carol.pk)
    reason = queue.reason_codes.get(code="verified")
    with pytest.raises(DatabaseError, match="second person"):
        _sql(
            "INSERT INTO queue_app_laneoutcome (task_id, kind, result, actor_id, actor_username, "
            "lease_token, verdict, reason_code_id, note, created_at) "
            "VALUES (%s, 'qa', 'reviewed', %s, '', %s, 'approve', %s, '', now())",
            [task.pk, alice.pk, token, reason.pk],
        )


def test_a_return_without_a_note_is_refused(checked_queue, alice, carol):
    task = open_task(decide_one(checked_queue, alice))
    token = _lease_to(task, carol.pk)
    with pytest.raises(DatabaseError, match="laneoutcome_return_has_note"):
        _sql(
            "INSERT INTO queue_app_laneoutcome (task_id, kind, result, actor_id, actor_username, "
            "lease_token, verdict, note, created_at) VALUES (%s, 'check', 'returned', %s, '', "
            "%s, '', '', now())",
            [task.pk, carol.pk, token],
        )


def test_two_review_decisions_in_one_round_are_refused(checked_queue, alice, bob):
    decision = decide_one(checked_queue, alice)
    reason = checked_queue.reason_codes.get(code="verified")
    with pytest.raises(DatabaseError, match="decision_one_per_item"):
        _sql(
            "INSERT INTO queue_app_decision (item_id, queue_id, reviewer_id, verdict, "
            "reason_code_id, evidence_hash, note, created_at, chain_hash, review_round) "
            "VALUES (%s, %s, %s, 'approve', %s, %s, '', now(), '', 7)",
            [decision.item_id, checked_queue.pk, bob.pk, reason.pk, decision.evidence_hash],
        )
