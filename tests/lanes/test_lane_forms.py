"""The lane forms (return, confirm, QA, adjudication) under bad input: the page, never a 500.

Each refusal answers with the task's page and a message (a 4xx, or 200 with form errors) and
writes nothing: no outcome, the task still open and still leased to its holder.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queue_app.errors import InvalidReason
from queue_app.models import Decision, EffectJob, ItemEvent, LaneOutcome, LaneTask
from queue_app.services import claim_lane_task, record_qa_review
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db

LONG = "x" * 10_001


def _as(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def qa_task(queue, alice, carol) -> LaneTask:
    """A blind QA review of alice's approval, leased to carol."""
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice)
    task = claim_lane_task(queue=queue, kind="qa", user=carol)
    assert task is not None
    return task


@pytest.fixture
def adjudication_task(qa_task, carol, adjudicator) -> LaneTask:
    """carol rejected alice's approval in QA; the disagreement is leased to dana."""
    record_qa_review(
        task_id=qa_task.pk,
        user=carol,
        lease_token=qa_task.lease_token,
        verdict="reject",
        reason_code="fraud",
    )
    task = claim_lane_task(queue=qa_task.queue, kind="adjudication", user=adjudicator)
    assert task is not None
    return task


# Per lane: the action, a post that the action accepts, and who holds the task.
GOOD = {
    "confirm": {},
    "return": {"note": "Amounts do not match"},
    "qa": {"verdict": "approve", "reason_code": "verified", "note": ""},
    "adjudicate": {"outcome": "overturn", "reason_code": "reviewer_error", "note": ""},
}

# Spoilt posts: a change to the good post (None drops the field).
SPOILT: dict[str, list[dict[str, Any]]] = {
    "confirm": [
        {"lease_token": None},
        {"lease_token": "not-a-uuid"},
        {"lease_token": "\x00"},
        {"lease_token": "wrong"},
    ],
    "return": [
        {"note": "why\x00"},
        {"note": "\x00"},
        {"note": LONG},
        {"note": None},
        {"note": "   "},
        {"lease_token": None},
        {"lease_token": "wrong"},
    ],
    "qa": [
        {"note": "fine\x00"},
        {"reason_code": "verified\x00"},
        {"verdict": "approve\x00"},
        {"note": LONG},
        {"reason_code": "x" * 5000},
        {"reason_code": "no-such-code"},
        {"reason_code": "fraud"},  # a reason to reject, with an approval
        {"reason_code": "reviewer_error"},  # an overturn reason is no QA reason
        {"verdict": "escalate"},
        {"verdict": "overturn", "reason_code": "reviewer_error"},
        {"verdict": None},
        {"reason_code": None},
        {"reason_code": ["verified", "nope"]},
        {"verdict": ["approve", "maybe"]},
        {"lease_token": "wrong"},
    ],
    "adjudicate": [
        {"note": "because\x00"},
        {"reason_code": "reviewer_error\x00"},
        {"outcome": "overturn\x00"},
        {"note": LONG},
        {"reason_code": "no-such-code"},
        {"reason_code": "verified"},  # an approve reason is no overturn reason
        {"reason_code": None},
        {"outcome": "maybe"},
        {"outcome": None},
        {"outcome": ["overturn", "maybe"]},
        {"lease_token": "wrong"},
    ],
}


def _post(task: LaneTask, change: dict[str, Any], action: str) -> dict[str, Any]:
    posted: dict[str, Any] = {"lease_token": str(task.lease_token), **GOOD[action]}
    for field, value in change.items():
        if value is None:
            posted.pop(field, None)
        elif value == "wrong":
            posted[field] = str(uuid.uuid4())
        else:
            posted[field] = value
    return posted


def _task_for(action: str, request: pytest.FixtureRequest) -> tuple[LaneTask, User]:
    if action in ("confirm", "return"):
        return request.getfixturevalue("held"), request.getfixturevalue("carol")
    if action == "qa":
        return request.getfixturevalue("qa_task"), request.getfixturevalue("carol")
    return request.getfixturevalue("adjudication_task"), request.getfixturevalue("adjudicator")


def _written() -> tuple[int, int, int, int]:
    return (
        LaneOutcome.objects.count(),
        EffectJob.objects.count(),
        Decision.objects.count(),
        ItemEvent.objects.count(),
    )


@pytest.mark.parametrize(
    ("action", "change"),
    [(action, change) for action, changes in SPOILT.items() for change in changes],
    ids=lambda value: repr(value)[:40],
)
def test_it_answers_a_spoilt_lane_form_with_the_page_and_writes_nothing(request, action, change):
    task, holder = _task_for(action, request)
    before = _written()
    lease = LaneTask.objects.values_list("state", "lease_owner_id", "lease_token").get(pk=task.pk)
    response = _as(holder).post(f"/lanes/{task.pk}/{action}/", _post(task, change, action))
    assert response.status_code in (200, 400, 409), response.status_code
    # The task's page, with the refusal in its messages.
    assert "console/lane_task.html" in [t.name for t in response.templates]
    said = " ".join(str(m) for m in response.context["messages"])
    assert "Nothing was recorded" in said or "open it again" in said, said
    assert _written() == before
    after = LaneTask.objects.values_list("state", "lease_owner_id", "lease_token").get(pk=task.pk)
    assert after == lease == ("open", holder.pk, task.lease_token)


@pytest.mark.parametrize("action", list(GOOD))
def test_the_good_post_of_each_lane_form_is_recorded(request, action):
    # The spoilt posts above are refused for what is spoilt, not because the good one fails.
    task, holder = _task_for(action, request)
    response = _as(holder).post(f"/lanes/{task.pk}/{action}/", _post(task, {}, action))
    assert response.status_code == 302
    assert LaneOutcome.objects.filter(task=task).exists()


@pytest.mark.parametrize("action", ["return", "qa", "adjudicate"])
def test_it_answers_a_nul_in_a_lane_note_with_a_form_error_not_a_500(request, action):
    task, holder = _task_for(action, request)
    posted = _post(task, {"note": "see attached\x00"}, action)
    response = _as(holder).post(f"/lanes/{task.pk}/{action}/", posted)
    assert response.status_code == 400
    assert "Null characters are not allowed." in response.content.decode()
    assert not LaneOutcome.objects.filter(task=task).exists()


@pytest.mark.parametrize(
    ("reason", "says"),
    [("no-such-code", "not one of this queue"), ("fraud", "That is a reason to reject")],
)
def test_it_answers_a_qa_reason_outside_the_verdicts_reasons_with_the_page(
    qa_task, carol, reason, says
):
    posted = _post(qa_task, {"reason_code": reason}, "qa")
    response = _as(carol).post(f"/lanes/{qa_task.pk}/qa/", posted)
    assert response.status_code == 400
    assert says in response.content.decode()
    assert not LaneOutcome.objects.exists()


@pytest.mark.parametrize("reason", ["no-such-code", "fraud", "reviewer_error"])
def test_record_qa_review_words_every_refusal_of_the_outcome_trigger(qa_task, carol, reason):
    # The service is the gate for every caller: the database's refusal becomes InvalidReason.
    with pytest.raises(InvalidReason):
        record_qa_review(
            task_id=qa_task.pk,
            user=carol,
            lease_token=qa_task.lease_token,
            verdict="approve",
            reason_code=reason,
        )
    assert not LaneOutcome.objects.exists()
    assert LaneTask.objects.get(pk=qa_task.pk).state == "open"
