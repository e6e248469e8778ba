"""Separation of duties: maker, checker, QA reviewer, adjudicator and overturner are distinct.

The personas: alice makes the decision, carol checks it, bob QA-reviews it, dana (staff, may
overturn) adjudicates, and sam (staff, may overturn) is an administrator beside the lanes.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission, User
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from queue_app.errors import NotPermitted
from queue_app.models import Decision, EffectJob, LaneTask, Queue, ReviewItem
from queue_app.services import (
    claim_lane_task,
    confirm_check,
    overturn_decision,
    record_qa_review,
    return_check,
)
from tests.conftest import with_overturn_permission
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db


@pytest.fixture
def sampled_queue(checked_queue: Queue) -> Queue:
    """The checked queue, every effective decision drawn for QA."""
    checked_queue.qa_rate = Decimal(100)
    checked_queue.save(update_fields=["qa_rate"])
    return checked_queue


def _confirmed(queue: Queue, maker: User, checker: User) -> Decision:
    decision = decide_one(queue, maker)
    task = claim_lane_task(queue=queue, kind="check", user=checker)
    assert task is not None and task.decision_id == decision.pk
    confirm_check(task_id=task.pk, user=checker, lease_token=task.lease_token)
    return decision


def _disagree(queue: Queue, qa_user: User) -> LaneTask:
    task = claim_lane_task(queue=queue, kind="qa", user=qa_user)
    assert task is not None
    record_qa_review(
        task_id=task.pk,
        user=qa_user,
        lease_token=task.lease_token,
        verdict="reject",
        reason_code="fraud",
    )
    return LaneTask.objects.get(kind="adjudication", source_id=task.pk)


def _take(task: LaneTask, user: User) -> None:
    """Lease the task to the user with a raw write, as a writer skipping the services would."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_lanetask SET lease_owner_id = %s, lease_token = gen_random_uuid(),"
            " lease_expires = now() + interval '5 minutes' WHERE id = %s",
            [user.pk, task.pk],
        )


def test_it_never_hands_the_checker_the_qa_review_of_what_they_confirmed(
    sampled_queue, alice, carol
):
    decision = _confirmed(sampled_queue, alice, carol)
    qa = LaneTask.objects.get(decision=decision, kind="qa")
    assert claim_lane_task(queue=sampled_queue, kind="qa", user=carol) is None
    with pytest.raises(DatabaseError, match="second person"):
        _take(qa, carol)


def test_it_never_hands_the_checker_the_adjudication_of_what_they_confirmed(
    sampled_queue, alice, carol, bob
):
    decision = _confirmed(sampled_queue, alice, carol)
    adjudication = _disagree(sampled_queue, bob)
    assert adjudication.decision_id == decision.pk
    carol = with_overturn_permission(carol)
    assert claim_lane_task(queue=sampled_queue, kind="adjudication", user=carol) is None
    with pytest.raises(DatabaseError, match="second person"):
        _take(adjudication, carol)


def test_it_refuses_the_checker_an_overturn_of_what_they_confirmed(sampled_queue, alice, carol):
    decision = _confirmed(sampled_queue, alice, carol)
    carol = with_overturn_permission(carol)
    with pytest.raises(NotPermitted, match="Separation of duties"):
        overturn_decision(
            decision_id=decision.pk,
            admin=carol,
            corrected_verdict="reject",
            reason_code="reviewer_error",
        )
    assert not Decision.objects.filter(supersedes=decision).exists()


def test_it_refuses_the_qa_reviewer_settling_their_disagreement_in_the_admin(
    sampled_queue, alice, carol, bob, client
):
    decision = _confirmed(sampled_queue, alice, carol)
    adjudication = _disagree(sampled_queue, bob)
    User.objects.filter(pk=bob.pk).update(is_staff=True)
    bob.user_permissions.add(Permission.objects.get(codename="view_decision"))
    client.force_login(with_overturn_permission(bob))
    response = client.post(
        reverse("admin:queue_app_decision_overturn", args=[decision.pk]),
        {
            "corrected_verdict": "reject",
            "reason_code": sampled_queue.reason_codes.get(code="reviewer_error").pk,
            "note": "mine",
        },
    )
    assert response.status_code == 200
    assert "adjudication lane" in response.content.decode()
    assert not Decision.objects.filter(supersedes=decision).exists()
    assert LaneTask.objects.get(pk=adjudication.pk).state == "open"


def test_it_leaves_no_adjudication_open_over_a_superseded_decision(
    sampled_queue, alice, carol, bob, supervisor
):
    # Anyone else's overturn beside the lane is refused too: the adjudicator settles it.
    decision = _confirmed(sampled_queue, alice, carol)
    adjudication = _disagree(sampled_queue, bob)
    with pytest.raises(NotPermitted, match="adjudication lane"):
        overturn_decision(
            decision_id=decision.pk,
            admin=supervisor,
            corrected_verdict="reject",
            reason_code="reviewer_error",
        )
    assert not Decision.objects.filter(supersedes=decision).exists()
    assert LaneTask.objects.get(pk=adjudication.pk).state == "open"


def test_it_holds_an_overturn_the_check_policy_covers_until_a_second_person_confirms(
    checked_queue, alice, carol, supervisor
):
    # A 250,000.00 write-off rejected, then overturned to approve by one holder of
    # can_overturn: the queue's policy covers approvals of 1,000.00 and more.
    decision = decide_one(
        checked_queue, alice, verdict="reject", reason="fraud", variance_amount="250000.00"
    )
    assert EffectJob.objects.filter(decision=decision).exists()
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    assert not EffectJob.objects.filter(decision=overturn).exists()
    assert ReviewItem.objects.get(pk=decision.item_id).state == "awaiting_check"
    # The overturner is not its checker; a second person is.
    assert claim_lane_task(queue=checked_queue, kind="check", user=supervisor) is None
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    assert task is not None and task.decision_id == overturn.pk
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    assert EffectJob.objects.filter(decision=overturn).exists()
    assert ReviewItem.objects.get(pk=decision.item_id).state == "decided"


def test_an_overturn_the_policy_does_not_cover_takes_effect_at_once(
    checked_queue, alice, supervisor
):
    decision = decide_one(checked_queue, alice, variance_amount="10.00")
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    assert EffectJob.objects.filter(decision=overturn).exists()
    assert not LaneTask.objects.filter(decision=overturn).exists()


def test_a_returned_overturn_leaves_the_decision_it_would_supersede_in_effect(
    checked_queue, alice, carol, supervisor
):
    decision = decide_one(
        checked_queue, alice, verdict="reject", reason="fraud", variance_amount="250000.00"
    )
    item = ReviewItem.objects.get(pk=decision.item_id)
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="not proven")
    after = ReviewItem.objects.get(pk=item.pk)
    assert (after.state, after.review_round, after.decided_at) == (
        "decided",
        item.review_round,
        item.decided_at,
    )
    assert not EffectJob.objects.filter(decision=overturn).exists()


def test_it_never_hands_the_maker_of_the_decision_the_check_of_its_overturn(
    checked_queue, alice, bob, supervisor
):
    decision = decide_one(
        checked_queue, bob, verdict="reject", reason="fraud", variance_amount="250000.00"
    )
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    # bob made the decision this overturn reverses: his claim passes over it, the trigger
    # refuses it to any other writer.
    assert claim_lane_task(queue=checked_queue, kind="check", user=bob) is None
    with pytest.raises(DatabaseError, match="second person"):
        _take(LaneTask.objects.get(decision=overturn, kind="check"), bob)
    task = claim_lane_task(queue=checked_queue, kind="check", user=alice)
    assert task is not None and task.decision_id == overturn.pk


def test_it_fills_the_checker_of_a_qa_task_queued_in_another_statement(sampled_queue, alice, carol):
    decision = _confirmed(sampled_queue, alice, carol)
    qa = LaneTask.objects.get(decision=decision, kind="qa")
    assert qa.checker_principal_id == carol.pk


def test_the_admin_says_an_overturn_waits_for_its_check(checked_queue, alice, supervisor, client):
    decision = decide_one(
        checked_queue, alice, verdict="reject", reason="fraud", variance_amount="250000.00"
    )
    supervisor.user_permissions.add(Permission.objects.get(codename="view_decision"))
    client.force_login(supervisor)
    response = client.post(
        reverse("admin:queue_app_decision_overturn", args=[decision.pk]),
        {
            "corrected_verdict": "approve",
            "reason_code": checked_queue.reason_codes.get(code="reviewer_error").pk,
            "note": "the statement proves the write-off",
        },
        follow=True,
    )
    assert "waits for a second person" in response.content.decode()
    overturn = Decision.objects.get(supersedes=decision)
    assert not EffectJob.objects.filter(decision=overturn).exists()
