"""Maker-checker: a decision that needs a check waits, without an effect, for a second person."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection

from queue_app.apply import apply_batch
from queue_app.errors import (
    EvidenceChanged,
    InvalidBounds,
    InvalidVerdict,
    NotPermitted,
    StaleLease,
)
from queue_app.models import (
    AppliedDecision,
    CheckPolicy,
    EffectJob,
    ItemEvent,
    LaneOutcome,
    ReviewItem,
)
from queue_app.second_person import check_needed
from queue_app.services import (
    claim_lane_task,
    claim_next,
    confirm_check,
    overturn_decision,
    replace_evidence,
    return_check,
    standing_outcome,
    submit_decision,
)
from tests.conftest import shown_hash
from tests.lanes.conftest import decide_one, open_task

pytestmark = pytest.mark.django_db


def test_it_holds_back_the_effect_of_a_decision_that_needs_a_check(checked_queue, alice):
    decision = decide_one(checked_queue, alice, variance_amount="1000.00")
    item = ReviewItem.objects.get(pk=decision.item_id)
    assert item.state == "awaiting_check"
    assert not EffectJob.objects.filter(decision=decision).exists()
    task = open_task(decision)
    assert (task.state, task.maker_id, task.queue_id) == ("open", alice.pk, checked_queue.pk)
    assert standing_outcome(item=item) is None  # not in effect until confirmed
    # Not claimable for review.
    assert claim_next(queue=checked_queue, reviewer=alice) is None


def test_a_decision_below_the_threshold_takes_effect_at_once(checked_queue, alice):
    decision = decide_one(checked_queue, alice, variance_amount="999.99")
    assert ReviewItem.objects.get(pk=decision.item_id).state == "decided"
    assert EffectJob.objects.filter(decision=decision).exists()
    assert not decision.lane_tasks.exists()


def test_the_checker_confirms_and_the_worker_applies_the_makers_verdict_once(
    checked_queue, alice, carol
):
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    assert task is not None and task.decision_id == decision.pk
    outcome = confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    assert (outcome.result, outcome.actor_id, outcome.actor_username) == (
        "confirmed",
        carol.pk,
        "carol",
    )
    assert ReviewItem.objects.get(pk=decision.item_id).state == "decided"
    assert EffectJob.objects.filter(decision=decision).count() == 1
    assert apply_batch() >= 1
    assert AppliedDecision.objects.get(decision=decision).status == "applied"
    assert standing_outcome(item=decision.item_id) == "approve"
    kinds = list(ItemEvent.objects.filter(item_id=decision.item_id).values_list("kind", flat=True))
    assert "check_confirmed" in kinds


def test_a_maker_never_gets_their_own_check(checked_queue, alice):
    decide_one(checked_queue, alice)
    assert claim_lane_task(queue=checked_queue, kind="check", user=alice) is None


def test_return_needs_a_note_and_reopens_the_item_for_a_new_checked_decision(
    checked_queue, alice, bob, carol
):
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    with pytest.raises(InvalidBounds):
        return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="  ")
    outcome = return_check(
        task_id=task.pk, user=carol, lease_token=task.lease_token, note="Variance not explained"
    )
    assert outcome.result == "returned"
    item = ReviewItem.objects.get(pk=decision.item_id)
    assert (item.state, item.review_round, item.decided_at) == ("pending", 1, None)
    assert not EffectJob.objects.filter(decision=decision).exists()
    # A new decision in the new round, again needing a check.
    leased = claim_next(queue=checked_queue, reviewer=bob)
    assert leased.pk == item.pk
    second = submit_decision(
        item_id=item.pk,
        reviewer=bob,
        lease_token=leased.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(leased),
    )
    assert second.review_round == 1
    # Reject has no policy here: it takes effect at once.
    assert EffectJob.objects.filter(decision=second).exists()
    assert standing_outcome(item=item) == "reject"


def test_the_returned_round_needs_a_check_again(checked_queue, alice, bob, carol):
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="Recheck")
    leased = claim_next(queue=checked_queue, reviewer=alice)
    again = submit_decision(
        item_id=leased.pk,
        reviewer=alice,
        lease_token=leased.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(leased),
    )
    assert again.pk != decision.pk
    assert open_task(again).state == "open"
    assert ReviewItem.objects.get(pk=leased.pk).state == "awaiting_check"


def test_changed_evidence_cannot_be_confirmed_and_goes_back_for_review(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice)
    replace_evidence(item_id=decision.item_id, actor=alice, payload={"variance_amount": "9.00"})
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    with pytest.raises(EvidenceChanged):
        confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    outcome = LaneOutcome.objects.get(task=task)
    assert outcome.result == "returned" and "Evidence changed" in outcome.note
    assert ReviewItem.objects.get(pk=decision.item_id).state == "pending"
    assert not EffectJob.objects.filter(decision=decision).exists()


def test_a_stale_token_confirms_nothing(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    with pytest.raises(StaleLease):
        confirm_check(
            task_id=task.pk, user=carol, lease_token="00000000-0000-0000-0000-000000000000"
        )
    assert not EffectJob.objects.filter(decision=decision).exists()


def test_a_second_confirm_is_refused_with_who_finished_it(checked_queue, alice, carol):
    decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    with pytest.raises(StaleLease, match="carol already finished"):
        confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)


def test_next_check_in_a_second_tab_renews_the_same_task(checked_queue, alice, carol):
    decide_one(checked_queue, alice)
    decide_one(checked_queue, alice)
    first = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    again = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    assert (again.pk, again.lease_token) == (first.pk, first.lease_token)


def test_an_unconfirmed_decision_is_returned_not_overturned(checked_queue, alice, supervisor):
    decision = decide_one(checked_queue, alice)
    with pytest.raises(InvalidVerdict, match="not been confirmed"):
        overturn_decision(
            decision_id=decision.pk,
            admin=supervisor,
            corrected_verdict="reject",
            reason_code="reviewer_error",
        )


def test_a_confirmed_decision_can_be_overturned(checked_queue, alice, carol, supervisor):
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    assert overturn.supersedes_id == decision.pk
    assert standing_outcome(item=decision.item_id) == "reject"


def test_the_database_refuses_an_overturn_of_an_unconfirmed_decision(
    checked_queue, alice, supervisor
):
    decision = decide_one(checked_queue, alice)
    reason = checked_queue.reason_codes.get(code="reviewer_error")
    with pytest.raises(Exception, match="unconfirmed"), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO queue_app_decision (item_id, queue_id, reviewer_id, verdict, "
            "reason_code_id, evidence_hash, note, supersedes_id, corrected_verdict, created_at, "
            "chain_hash) VALUES (%s, %s, %s, 'overturn', %s, %s, '', %s, 'reject', now(), '')",
            [
                decision.item_id,
                checked_queue.pk,
                supervisor.pk,
                reason.pk,
                decision.evidence_hash,
                decision.pk,
            ],
        )


def test_service_users_and_outsiders_get_no_lane(checked_queue, alice, outsider):
    from queue_app.models import ApiClient

    decide_one(checked_queue, alice)
    assert claim_lane_task(queue=checked_queue, kind="check", user=outsider) is None
    robot = type(alice).objects.create_user("robot-user")
    ApiClient.objects.create(name="bot", user=robot, token_prefix="x", token_hash="y" * 64)
    with pytest.raises(NotPermitted):
        claim_lane_task(queue=checked_queue, kind="check", user=robot)


@pytest.mark.parametrize(
    ("payload", "needs"),
    [
        ({"variance_amount": "1000.00"}, True),
        ({"variance_amount": Decimal("1000")}, True),
        ({"variance_amount": Decimal("999.9999999999999999999")}, False),
        ({"variance_amount": "1e3"}, True),
        ({"variance_amount": 5}, False),
        ({"variance_amount": "n/a"}, True),  # fails safe
        ({}, True),  # missing: fails safe
        ({"variance_amount": True}, True),  # not a number
    ],
)
def test_the_threshold_is_compared_exactly(payload, needs):
    policies = [{"verdict": "approve", "path": "variance_amount", "threshold": "1000.00"}]
    assert check_needed(policies=policies, verdict="approve", payload=payload) is needs
    assert check_needed(policies=policies, verdict="reject", payload=payload) is False


def test_a_policy_without_a_path_always_applies(queue, alice):
    CheckPolicy.objects.create(queue=queue, verdict="reject")
    decision = decide_one(queue, alice, verdict="reject", reason="fraud")
    assert ReviewItem.objects.get(pk=decision.item_id).state == "awaiting_check"


def test_the_abandonment_sweep_leaves_a_returned_item_in_place(checked_queue, alice, carol, queue):
    from queue_app.services import escalate_abandoned

    checked_queue.escalation_queue = queue.escalation_queue
    checked_queue.escalation_threshold = 1
    checked_queue.save(update_fields=["escalation_queue", "escalation_threshold"])
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="Again")
    ReviewItem.objects.filter(pk=decision.item_id).update(lease_count=5)
    escalate_abandoned()  # would fail on the decision's foreign key if it moved the item
    assert ReviewItem.objects.get(pk=decision.item_id).queue_id == checked_queue.pk
    # ...and it is not stuck: past the threshold, the claim still hands it out in its queue.
    reclaimed = claim_next(queue=checked_queue, reviewer=carol)
    assert reclaimed is not None and reclaimed.pk == decision.item_id
