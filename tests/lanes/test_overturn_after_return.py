"""A returned overturn stays in the log and a new overturn of the same decision may follow.

The personas: alice makes a 250,000.00 rejection, sam (supervisor) overturns it to approve,
carol checks the overturn, and dana (may overturn) writes the next correction.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.db import IntegrityError, transaction
from django.urls import reverse

from queue_app.apply import apply_batch
from queue_app.errors import AlreadySuperseded
from queue_app.evidence import item_evidence_hash
from queue_app.models import AppliedDecision, Decision, DecisionStory, Queue, ReviewItem
from queue_app.services import (
    claim_lane_task,
    confirm_check,
    overturn_decision,
    return_check,
    standing_outcome,
)
from tests.blocking import Session, wait_until_blocked_by_me
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db


def _rejected(queue: Queue, maker: User) -> Decision:
    return decide_one(queue, maker, verdict="reject", reason="fraud", variance_amount="250000.00")


def _overturn(decision: Decision, admin: User, note: str = "") -> Decision:
    return overturn_decision(
        decision_id=decision.pk,
        admin=admin,
        corrected_verdict="approve",
        reason_code="reviewer_error",
        note=note,
    )


def _check(queue: Queue, checker: User, *, confirm: bool) -> None:
    task = claim_lane_task(queue=queue, kind="check", user=checker)
    assert task is not None
    if confirm:
        confirm_check(task_id=task.pk, user=checker, lease_token=task.lease_token)
    else:
        return_check(task_id=task.pk, user=checker, lease_token=task.lease_token, note="unproven")


def _status(decision: Decision) -> str:
    return DecisionStory.objects.get(decision_id=decision.pk).status


def test_it_lets_a_new_overturn_follow_a_returned_one(
    checked_queue, alice, carol, supervisor, adjudicator
):
    decision = _rejected(checked_queue, alice)
    first = _overturn(decision, supervisor)
    _check(checked_queue, carol, confirm=False)
    assert (_status(decision), _status(first)) == ("pending", "returned")

    second = _overturn(decision, adjudicator, note="the bank statement is attached now")
    assert second.supersedes_id == decision.pk
    assert (_status(decision), _status(first), _status(second)) == (
        "pending",
        "returned",
        "awaiting_check",
    )
    assert standing_outcome(item=decision.item_id) == "reject"
    _check(checked_queue, carol, confirm=True)
    assert (_status(decision), _status(first), _status(second)) == (
        "overturned",
        "returned",
        "confirmed",
    )
    assert standing_outcome(item=decision.item_id) == "approve"
    assert ReviewItem.objects.get(pk=decision.item_id).state == "decided"


def test_it_refuses_a_second_overturn_while_one_awaits_its_check(
    checked_queue, alice, supervisor, adjudicator
):
    decision = _rejected(checked_queue, alice)
    first = _overturn(decision, supervisor)
    with pytest.raises(AlreadySuperseded, match=f"#{first.pk} .*awaits its check"):
        _overturn(decision, adjudicator)
    assert Decision.objects.filter(supersedes=decision).count() == 1


def test_the_database_refuses_a_second_overturn_in_force_or_awaiting(
    checked_queue, alice, supervisor, adjudicator
):
    # A writer skipping the service meets the same rule, written once in the database.
    decision = _rejected(checked_queue, alice)
    _overturn(decision, supervisor)
    item = ReviewItem.objects.get(pk=decision.item_id)
    with pytest.raises(IntegrityError, match="supersedes"), transaction.atomic():
        Decision.objects.insert(
            item_id=item.pk,
            queue_id=item.queue_id,
            reviewer_id=adjudicator.pk,
            verdict="overturn",
            reason_code="reviewer_error",
            evidence_hash=item_evidence_hash(item),
            note="",
            supersedes_id=decision.pk,
            corrected_verdict="approve",
        )
    assert Decision.objects.filter(supersedes=decision).count() == 1


def _raw_overturn(decision: Decision, admin: User) -> Decision:
    """Write an overturn of the decision the way a writer skipping the service would."""
    item = ReviewItem.objects.get(pk=decision.item_id)
    return Decision.objects.insert(
        item_id=item.pk,
        queue_id=item.queue_id,
        reviewer_id=admin.pk,
        verdict="overturn",
        reason_code="reviewer_error",
        evidence_hash=item_evidence_hash(item),
        note="",
        supersedes_id=decision.pk,
        corrected_verdict="approve",
    )


@pytest.mark.django_db(transaction=True)
def test_two_raw_overturns_at_once_leave_one_row_and_one_refusal(
    checked_queue, alice, supervisor, adjudicator
):
    # No service lock here: the trigger's own lock on the item makes the second writer wait
    # for the first to commit, then read its overturn.
    decision = _rejected(checked_queue, alice)
    with transaction.atomic():
        _raw_overturn(decision, supervisor)
        other = Session(lambda: _raw_overturn(decision, adjudicator))
        other.start()
        wait_until_blocked_by_me(other)
    with pytest.raises(IntegrityError, match="supersedes"):
        other.outcome()
    assert Decision.objects.filter(supersedes=decision).count() == 1


def test_it_carries_out_a_decision_whose_overturn_still_awaits_its_check(
    checked_queue, alice, carol, supervisor, ledger
):
    # The overturn may yet be returned: until its check confirms it, what it names stands
    # and its effect runs.
    decision = _rejected(checked_queue, alice)
    first = _overturn(decision, supervisor)
    assert apply_batch() >= 1
    assert AppliedDecision.objects.get(decision=decision).status == "applied"
    _check(checked_queue, carol, confirm=False)
    assert _status(first) == "returned"
    assert _status(decision) == "applied"


def test_the_admin_shows_the_returned_overturn_and_offers_a_new_one(
    checked_queue, alice, carol, supervisor, adjudicator, client
):
    decision = _rejected(checked_queue, alice)
    first = _overturn(decision, supervisor)
    url = reverse("admin:queue_app_decision_overturn", args=[decision.pk])
    User.objects.filter(pk=adjudicator.pk).update(is_staff=True)
    adjudicator.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_decision", "view_reviewitem"])
    )
    client.force_login(User.objects.get(pk=adjudicator.pk))

    waiting = client.get(url).content.decode()
    assert f"overturn #{first.pk}" in waiting and "awaits its check" in waiting
    assert 'id="overturn-form"' not in waiting

    _check(checked_queue, carol, confirm=False)
    page = client.get(url).content.decode()
    assert 'id="overturn-form"' in page
    assert f"Overturn #{first.pk}" in page and "returned by its checker" in page
    response = client.post(
        url,
        {
            "corrected_verdict": "approve",
            "reason_code": checked_queue.reason_codes.get(code="reviewer_error").pk,
            "note": "the bank statement is attached now",
        },
    )
    assert response.status_code == 302
    second = Decision.objects.filter(supersedes=decision).latest("id")
    assert second.pk != first.pk and _status(second) == "awaiting_check"
    timeline = client.get(
        reverse("admin:queue_app_reviewitem_change", args=[decision.item_id])
    ).content.decode()
    assert f"Overturn #{first.pk} of decision #{decision.pk}" in timeline
    assert f"Overturn #{second.pk} of decision #{decision.pk}" in timeline
