"""Who may hold and decide an appeal, enforced by the database: nobody with a part in the
decision's chain, nobody an API client acts as, even when the parts race on two connections."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction

from queue_app.errors import NotPermitted
from queue_app.models import (
    Appeal,
    AppealNotice,
    Decision,
    LaneOutcome,
    LaneTask,
    Queue,
    StatementOfReasons,
)
from queue_app.services import appeals, claim_lane_task, overturn_decision
from tests.api.conftest import make_client
from tests.appeals.conftest import file, restricted
from tests.blocking import Session
from tests.conftest import with_overturn_permission

pytestmark = pytest.mark.django_db


def lease_as(task: LaneTask, user_id: int) -> None:
    """Give the task's lease to the user directly, as a write outside the services would."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_lanetask SET lease_owner_id = %s, lease_token = gen_random_uuid(), "
            "lease_expires = now() + interval '5 minutes' WHERE id = %s",
            [user_id, task.pk],
        )


def outcome_as(task: LaneTask, user_id: int) -> None:
    """Write the appeal's outcome directly, naming the user as its actor."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO queue_app_laneoutcome (task_id, kind, result, actor_id, actor_username, "
            "lease_token, verdict, note, created_at) SELECT id, kind, 'upheld', %s, '', "
            "lease_token, '', 'It stands.', now() FROM queue_app_lanetask WHERE id = %s",
            [user_id, task.pk],
        )


@pytest.fixture
def appealed(posts: Queue, alice, forwarder) -> Appeal:
    return file(forwarder[0], restricted(posts, alice))


def test_the_maker_may_not_hold_the_appeal(appealed, alice):
    alice = with_overturn_permission(alice)
    with pytest.raises(IntegrityError, match="second person"), transaction.atomic():
        lease_as(appealed.task, alice.pk)
    # The lane passes the task over for her: Next appeal finds nothing.
    assert claim_lane_task(queue=appealed.queue, kind="appeal", user=alice) is None


def test_a_person_with_no_part_claims_it(appealed, dave):
    task = claim_lane_task(queue=appealed.queue, kind="appeal", user=dave)
    assert task is not None and task.pk == appealed.task_id


def test_an_api_clients_service_user_may_neither_hold_nor_decide_it(appealed, dave, posts):
    machine, _ = make_client("adjudicator", [posts])
    service_user = with_overturn_permission(machine.user)
    with pytest.raises(IntegrityError, match="second person"), transaction.atomic():
        lease_as(appealed.task, service_user.pk)
    # Nor write its outcome under a person's lease.
    task = claim_lane_task(queue=appealed.queue, kind="appeal", user=dave)
    with pytest.raises(IntegrityError, match="second person"), transaction.atomic():
        outcome_as(task, service_user.pk)
    with pytest.raises(NotPermitted):
        appeals.decide_appeal(
            task_id=task.pk,
            user=service_user,
            lease_token=task.lease_token,
            reverse=False,
            reasons="It stands.",
        )
    assert not LaneOutcome.objects.filter(task=task).exists()


def test_the_api_client_of_a_person_counts_as_that_person(appealed, alice, posts):
    alice = with_overturn_permission(alice)
    machine, _ = make_client("alices-bot", [posts])
    machine.created_by = alice
    machine.save(update_fields=["created_by"])
    other = restricted(posts, machine.user)  # decided by alice's API client
    appeal = file(appealed.client, other, reference="c-2")
    with pytest.raises(IntegrityError, match="second person"), transaction.atomic():
        lease_as(appeal.task, alice.pk)


def test_the_checker_may_not_hold_the_appeal(posts, alice, carol, forwarder):
    from queue_app.models import CheckPolicy
    from queue_app.services import confirm_check

    CheckPolicy.objects.create(queue=posts, verdict="reject")
    carol = with_overturn_permission(carol)
    from tests.statements.conftest import decide

    decision = decide(posts, alice)
    check = claim_lane_task(queue=posts, kind="check", user=carol)
    confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)
    from queue_app.apply import apply_batch

    while apply_batch():
        pass
    appeal = file(forwarder[0], StatementOfReasons.objects.get(decision=decision))
    with pytest.raises(IntegrityError, match="second person"), transaction.atomic():
        lease_as(appeal.task, carol.pk)
    assert claim_lane_task(queue=posts, kind="appeal", user=carol) is None


def test_earlier_overturners_may_not_hold_the_appeal(
    posts, alice, supervisor, erin, dave, forwarder
):
    from queue_app.apply import apply_batch

    first = restricted(posts, alice)
    lifted = overturn_decision(
        decision_id=first.decision_id,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
        note="Not fraud.",
    )
    again = overturn_decision(
        decision_id=lifted.pk,
        admin=erin,
        corrected_verdict="reject",
        reason_code="reviewer_error",
        note="It was fraud after all.",
    )
    while apply_batch():
        pass
    appeal = file(forwarder[0], StatementOfReasons.objects.get(decision=again))
    for barred in (supervisor, erin, with_overturn_permission(alice)):
        with pytest.raises(IntegrityError, match="second person"), transaction.atomic():
            lease_as(appeal.task, barred.pk)
    assert claim_lane_task(queue=posts, kind="appeal", user=dave).pk == appeal.task_id


@pytest.mark.django_db(transaction=True)
def test_a_part_taken_on_another_connection_during_the_claim_still_bars_the_outcome(
    posts, alice, dave, forwarder
):
    """dave leases the decision's QA review on one connection while, on another, he claims
    its appeal: neither trigger sees the other's uncommitted lease, so both leases are taken.
    The appeal's outcome trigger, under the item's lock, sees both and refuses him."""
    posts.qa_rate = Decimal(100)
    posts.save(update_fields=["qa_rate"])
    statement = restricted(posts, alice)
    qa = LaneTask.objects.get(decision_id=statement.decision_id, kind="qa")
    appeal = file(forwarder[0], statement)
    with transaction.atomic():
        lease_as(qa, dave.pk)  # uncommitted: holds the QA task's row and a key share of the item
        claim = Session(lambda: claim_lane_task(queue=posts, kind="appeal", user=dave))
        claim.start()
        claimed = claim.outcome()  # not blocked: a key share does not wait for a key share
    assert claimed is not None and claimed.pk == appeal.task_id
    assert LaneTask.objects.get(pk=qa.pk).lease_owner_id == dave.pk
    with pytest.raises(NotPermitted):
        appeals.decide_appeal(
            task_id=claimed.pk,
            user=dave,
            lease_token=claimed.lease_token,
            reverse=True,
            corrected_verdict="approve",
            reason_code="reviewer_error",
            reasons="The post warned against the scam.",
        )
    assert not LaneOutcome.objects.filter(task_id=claimed.pk).exists()
    assert not AppealNotice.objects.exists()
    assert not Decision.objects.filter(supersedes_id=statement.decision_id).exists()


def test_appeals_are_append_only(appealed):
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        Appeal.objects.filter(pk=appealed.pk).update(text="changed")
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        Appeal.objects.filter(pk=appealed.pk).delete()


def test_an_appeal_cannot_name_a_task_of_another_decision(appealed, posts, alice):
    other = restricted(posts, alice)
    with pytest.raises(IntegrityError, match="appeal: task"), transaction.atomic():
        Appeal.objects.create(
            queue=posts,
            item_id=other.decision.item_id,
            decision_id=other.decision_id,
            client=appealed.client,
            reference="forged",
            request_sha256="0" * 64,
            text="forged",
            received_at=appealed.received_at,
            due_at=appealed.due_at,
            window_ends_at=appealed.window_ends_at,
            task=appealed.task,
        )
