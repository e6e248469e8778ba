"""An adjudication over a decision that an overturn has replaced since: closed, with words.

The personas: alice approves, carol confirms it, sam (supervisor) overturns it to reject in
the admin while its QA review is open, bob QA-reviews it (and disagrees with alice), and dana
(may overturn) takes the adjudication. The QA review still measures alice's accuracy; the
adjudication can no longer change the outcome, so it is closed, never a second overturn.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queue_app.errors import InvalidVerdict
from queue_app.models import Decision, LaneOutcome, LaneTask, Queue
from queue_app.services import (
    adjudicate,
    claim_lane_task,
    confirm_check,
    overturn_decision,
    record_qa_review,
)
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db


@pytest.fixture
def sampled_queue(checked_queue: Queue) -> Queue:
    """The checked queue, every effective decision drawn for QA."""
    checked_queue.qa_rate = Decimal(100)
    checked_queue.save(update_fields=["qa_rate"])
    return checked_queue


def _overturned_during_qa(queue: Queue, alice: User, carol: User, sam: User, bob: User):
    """Alice's approval, overturned to reject by sam; then bob's QA review disagrees with it."""
    decision = decide_one(queue, alice)
    check = claim_lane_task(queue=queue, kind="check", user=carol)
    confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=sam,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    qa = claim_lane_task(queue=queue, kind="qa", user=bob)
    assert qa is not None and qa.decision_id == decision.pk
    record_qa_review(
        task_id=qa.pk, user=bob, lease_token=qa.lease_token, verdict="reject", reason_code="fraud"
    )
    assert LaneOutcome.objects.get(task=qa).agrees_verdict is False  # alice's accuracy
    return decision, overturn


def test_it_closes_an_adjudication_whose_decision_an_overturn_replaced(
    sampled_queue, alice, carol, supervisor, bob, adjudicator
):
    decision, overturn = _overturned_during_qa(sampled_queue, alice, carol, supervisor, bob)
    task = claim_lane_task(queue=sampled_queue, kind="adjudication", user=adjudicator)
    assert task is not None and task.decision_id == decision.pk
    client = Client()
    client.force_login(adjudicator)

    page = client.get(f"/lanes/{task.pk}/").content.decode()
    assert f"Decision #{decision.pk} no longer stands" in page
    assert f"overturn #{overturn.pk}" in page
    assert 'value="close"' in page and 'id="outcome-overturn"' not in page

    # A forced overturn (or uphold) gets the page again with the words; nothing is written.
    forced = client.post(
        f"/lanes/{task.pk}/adjudicate/",
        {
            "lease_token": str(task.lease_token),
            "outcome": "overturn",
            "reason_code": "reviewer_error",
        },
    )
    assert forced.status_code == 400
    assert "Upholding or overturning here would change nothing" in forced.content.decode()
    assert Decision.objects.filter(supersedes=decision).count() == 1
    assert LaneTask.objects.get(pk=task.pk).state == "open"

    closed = client.post(
        f"/lanes/{task.pk}/adjudicate/",
        {"lease_token": str(task.lease_token), "outcome": "close", "note": "already corrected"},
    )
    assert closed.status_code == 302
    assert LaneOutcome.objects.get(task=task).result == "closed"
    assert Decision.objects.filter(supersedes=decision).count() == 1


def test_it_refuses_to_close_an_adjudication_whose_decision_stands(
    sampled_queue, alice, carol, bob, adjudicator
):
    decision = decide_one(sampled_queue, alice)
    check = claim_lane_task(queue=sampled_queue, kind="check", user=carol)
    confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)
    qa = claim_lane_task(queue=sampled_queue, kind="qa", user=bob)
    record_qa_review(
        task_id=qa.pk, user=bob, lease_token=qa.lease_token, verdict="reject", reason_code="fraud"
    )
    task = claim_lane_task(queue=sampled_queue, kind="adjudication", user=adjudicator)
    with pytest.raises(InvalidVerdict, match=f"#{decision.pk} still stands"):
        adjudicate(task_id=task.pk, user=adjudicator, lease_token=task.lease_token, close=True)
    assert LaneTask.objects.get(pk=task.pk).state == "open"


def test_the_database_refuses_upholding_a_decision_an_overturn_replaced(
    sampled_queue, alice, carol, supervisor, bob, adjudicator, monkeypatch
):
    # With the service's question skipped, the outcome's trigger still refuses.
    from queue_app.services import lanes

    _overturned_during_qa(sampled_queue, alice, carol, supervisor, bob)
    task = claim_lane_task(queue=sampled_queue, kind="adjudication", user=adjudicator)
    monkeypatch.setattr(lanes, "replaced_by", lambda **kwargs: None)
    with pytest.raises(InvalidVerdict, match="What stands changed"):
        adjudicate(task_id=task.pk, user=adjudicator, lease_token=task.lease_token, uphold=True)
    assert LaneTask.objects.get(pk=task.pk).state == "open"
