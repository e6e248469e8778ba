"""A lane's claim passes over every task its claimer has another part in, and hands out the next.

The personas: alice makes decisions, carol checks, bob QA-reviews, dana (may overturn)
adjudicates and sam (staff, may overturn) corrects decisions beside the lanes. Each test puts a
task the claimer may not take at the head of a lane and another behind it: the claim must hand
out the one behind, never refuse, and the console's home must not count the barred one.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import transaction

from queue_app.models import Decision, LaneTask, Queue
from queue_app.services import (
    adjudicate,
    claim_lane_task,
    confirm_check,
    lanes_for_user,
    overturn_decision,
    record_qa_review,
)
from tests.blocking import Session, wait_until_blocked_by_me
from tests.conftest import with_overturn_permission
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db

# A rejected write-off the queue's check policy does not cover; overturned to an approval, it is.
BIG_REJECT = {"verdict": "reject", "reason": "fraud", "variance_amount": "250000.00"}


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


def _overturn(decision: Decision, admin: User, verdict: str) -> Decision:
    return overturn_decision(
        decision_id=decision.pk,
        admin=admin,
        corrected_verdict=verdict,
        reason_code="reviewer_error",
    )


def _open_count(user: User, queue: Queue, kind: str) -> int:
    lanes = lanes_for_user(user=user, queue_ids=[queue.pk])
    return next(
        (
            lane["open"]
            for lane in lanes
            if lane["queue"]["pk"] == queue.pk and lane["kind"] == kind
        ),
        0,
    )


def test_it_hands_the_overturner_the_qa_review_behind_the_decision_they_overturned(
    sampled_queue, alice, carol, bob
):
    first = _confirmed(sampled_queue, alice, carol)
    second = _confirmed(sampled_queue, alice, carol)
    bob = with_overturn_permission(bob)
    _overturn(first, bob, "reject")
    task = claim_lane_task(queue=sampled_queue, kind="qa", user=bob)
    assert task is not None and task.decision_id == second.pk
    assert LaneTask.objects.get(decision=first, kind="qa").lease_owner_id is None


def test_it_hands_the_maker_the_check_behind_the_check_of_an_overturn_of_her_decision(
    checked_queue, alice, bob, supervisor
):
    decision = decide_one(checked_queue, bob, **BIG_REJECT)
    overturn = _overturn(decision, supervisor, "approve")
    behind = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=bob)
    assert task is not None and task.decision_id == behind.pk
    assert LaneTask.objects.get(decision=overturn, kind="check").lease_owner_id is None


def test_it_hands_the_qa_reviewer_the_check_behind_the_check_of_an_overturn_they_qa_reviewed(
    sampled_queue, alice, bob, supervisor
):
    decision = decide_one(sampled_queue, alice, **BIG_REJECT)
    qa = claim_lane_task(queue=sampled_queue, kind="qa", user=bob)
    assert qa is not None and qa.decision_id == decision.pk
    record_qa_review(
        task_id=qa.pk, user=bob, lease_token=qa.lease_token, verdict="reject", reason_code="fraud"
    )
    _overturn(decision, supervisor, "approve")
    behind = decide_one(sampled_queue, alice)
    task = claim_lane_task(queue=sampled_queue, kind="check", user=bob)
    assert task is not None and task.decision_id == behind.pk


def test_it_hands_the_holder_of_an_overturns_check_the_qa_review_behind_its_decisions(
    sampled_queue, alice, carol, supervisor
):
    decision = decide_one(sampled_queue, alice, **BIG_REJECT)  # drawn for QA at once
    overturn = _overturn(decision, supervisor, "approve")
    check = claim_lane_task(queue=sampled_queue, kind="check", user=carol)
    assert check is not None and check.decision_id == overturn.pk
    behind = decide_one(sampled_queue, alice, **BIG_REJECT)
    task = claim_lane_task(queue=sampled_queue, kind="qa", user=carol)
    assert task is not None and task.decision_id == behind.pk


def test_it_hands_the_adjudicator_who_upheld_the_check_behind_a_later_overturns(
    sampled_queue, alice, bob, adjudicator, supervisor
):
    decision = decide_one(sampled_queue, alice, **BIG_REJECT)
    qa = claim_lane_task(queue=sampled_queue, kind="qa", user=bob)
    record_qa_review(
        task_id=qa.pk,
        user=bob,
        lease_token=qa.lease_token,
        verdict="approve",
        reason_code="verified",
    )
    settle = claim_lane_task(queue=sampled_queue, kind="adjudication", user=adjudicator)
    assert settle is not None and settle.decision_id == decision.pk
    adjudicate(task_id=settle.pk, user=adjudicator, lease_token=settle.lease_token, uphold=True)
    _overturn(decision, supervisor, "approve")
    behind = decide_one(sampled_queue, alice)
    task = claim_lane_task(queue=sampled_queue, kind="check", user=adjudicator)
    assert task is not None and task.decision_id == behind.pk


def test_the_home_page_does_not_count_a_task_its_claim_passes_over(
    sampled_queue, alice, carol, bob
):
    first = _confirmed(sampled_queue, alice, carol)
    bob = with_overturn_permission(bob)
    assert _open_count(bob, sampled_queue, "qa") == 1
    _overturn(first, bob, "reject")
    assert _open_count(bob, sampled_queue, "qa") == 0
    assert _open_count(carol, sampled_queue, "qa") == 0  # the checker, by the stored column
    assert _open_count(alice, sampled_queue, "qa") == 0  # the maker, likewise
    second = _confirmed(sampled_queue, alice, carol)
    assert _open_count(bob, sampled_queue, "qa") == 1
    task = claim_lane_task(queue=sampled_queue, kind="qa", user=bob)
    assert task is not None and task.decision_id == second.pk


@pytest.mark.django_db(transaction=True)
def test_it_passes_over_a_task_whose_overturn_commits_while_the_claim_waits(
    sampled_queue, alice, carol, bob
):
    # bob's claim reads the lane before his own overturn (another tab) commits: the lane
    # trigger, waiting on the item's lock, then refuses the head; the claim tries again and
    # hands out the task behind it instead of a refusal.
    first = _confirmed(sampled_queue, alice, carol)
    second = _confirmed(sampled_queue, alice, carol)
    bob = with_overturn_permission(bob)
    with transaction.atomic():
        _overturn(first, bob, "reject")
        claim = Session(lambda: claim_lane_task(queue=sampled_queue, kind="qa", user=bob))
        claim.start()
        wait_until_blocked_by_me(claim)
    task = claim.outcome()
    assert task is not None and task.decision_id == second.pk
    assert LaneTask.objects.get(decision=first, kind="qa").lease_owner_id is None
