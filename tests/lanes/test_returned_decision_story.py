"""A decision its checker returned, or one still awaiting its check, never stands anywhere.

Each surface that shows a standing outcome or a decision's verdict is read as a person reads
it: the admin's item page, the console's earlier decisions and same-subject table, My work,
and the API's list by subject key (its item route is the one that was right already).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queue_app.models import Decision, Queue, ReviewItem
from queue_app.selectors.my_work import my_work
from queue_app.services import (
    claim_lane_task,
    claim_next,
    create_item,
    return_check,
    submit_decision,
)
from tests.api.conftest import caller_for, make_client
from tests.conftest import shown_hash

pytestmark = pytest.mark.django_db

SUBJECT = "cust-77"


@dataclass
class Subject:
    returned: Decision  # alice's approve, returned by bob: its item is pending again
    awaiting: Decision  # carol's approve, its check still open
    other: ReviewItem  # a third item of the same customer, not decided


def _decide(queue: Queue, maker: User, key: str) -> Decision:
    create_item(
        queue=queue,
        subject=f"Write-off {key}",
        payload={"variance_amount": "1500.00"},
        idempotency_key=key,
        subject_key=SUBJECT,
    )
    leased = claim_next(queue=queue, reviewer=maker)
    assert leased is not None
    return submit_decision(
        item_id=leased.pk,
        reviewer=maker,
        lease_token=leased.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(leased),
    )


@pytest.fixture
def subject(checked_queue: Queue, alice: User, bob: User, carol: User) -> Subject:
    returned = _decide(checked_queue, alice, "a")
    awaiting = _decide(checked_queue, carol, "b")
    task = claim_lane_task(queue=checked_queue, kind="check", user=bob)
    assert task is not None and task.decision_id == returned.pk
    return_check(task_id=task.pk, user=bob, lease_token=task.lease_token, note="Wrong ledger")
    other = create_item(
        queue=checked_queue,
        subject="Write-off c",
        payload={"variance_amount": "10.00"},
        idempotency_key="c",
        subject_key=SUBJECT,
    )[0]
    return Subject(returned=returned, awaiting=awaiting, other=other)


def _browser(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_says_nothing_stands_on_the_admin_page_of_a_returned_decision(subject):
    root = User.objects.create_superuser("root", password="pw-root")
    page = _browser(root).get(f"/admin/queue_app/reviewitem/{subject.returned.item_id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Standing outcome: <strong>not decided yet</strong>" in html
    assert "Standing outcome: <strong>approve</strong>" not in html
    assert f"Decision #{subject.returned.pk}: approve (returned by the checker)" in html


def test_it_marks_a_returned_decision_in_the_console_earlier_decisions(subject, bob):
    page = _browser(bob).get(f"/items/{subject.returned.item_id}/")
    assert page.status_code == 200
    assert "returned by the checker" in page.content.decode()
    [shown] = page.context["decisions"]
    assert shown.story_status == "returned"


def test_it_counts_a_returned_approve_apart_in_my_work(subject, alice):
    page = _browser(alice).get("/my-work/")
    assert "Approve, returned by the checker" in page.content.decode()
    [queue] = my_work(reviewer_id=alice.pk).counts
    assert [(v.verdict, v.held, v.month) for v in queue.verdicts] == [("approve", "returned", 1)]
    # And where My work finds the decision again.
    found = _browser(alice).get(f"/my-work/?item={subject.returned.item_id}")
    assert "returned by the checker" in found.content.decode()


def test_it_lists_no_standing_outcome_by_subject_key_in_the_api(subject, checked_queue):
    _, token = make_client("upstream", [checked_queue])
    reply = caller_for(token).get(f"/items?subject_key={SUBJECT}")
    assert reply.status == 200
    outcomes = {row["id"]: row["standing_outcome"] for row in reply.body["items"]}
    assert outcomes == {
        subject.returned.item_id: None,
        subject.awaiting.item_id: None,
        subject.other.pk: None,
    }
    for decision in (subject.returned, subject.awaiting):
        item = caller_for(token).get(f"/items/{decision.item_id}").body
        assert item["standing_outcome"] is None
    returned = caller_for(token).get(f"/items/{subject.returned.item_id}").body
    assert [d["status"] for d in returned["decisions"]] == ["returned"]


def test_it_shows_no_verdict_in_the_console_same_subject_table(subject, bob):
    page = _browser(bob).get(f"/items/{subject.other.pk}/")
    assert page.status_code == 200
    rows = {row["id"]: row for row in page.context["subject_items"]}
    assert rows[subject.returned.item_id]["verdict"] is None
    assert rows[subject.awaiting.item_id]["verdict"] is None
    assert "verdict-tag verdict-approve" not in page.content.decode()
