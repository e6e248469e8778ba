"""My work, continued: the holds a reviewer put in place, and their own QA agreement."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from queue_app.db.statements import mywork as mywork_sql
from queue_app.models import LaneTask
from queue_app.second_person import wilson_interval
from queue_app.selectors.my_work import my_agreement, my_holds, my_work
from queue_app.services import (
    claim_lane_task,
    claim_next,
    hold_item,
    record_qa_review,
    replace_evidence,
)
from tests.clocks.helpers import add_hold_reasons, item
from tests.console.conftest import login
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db


def put_on_hold(queue, reviewer, *, hours: float = 2, code: str = "awaiting_documents"):
    leased = claim_next(queue=queue, reviewer=reviewer)
    hold_item(
        item_id=leased.pk,
        reviewer=reviewer,
        lease_token=leased.lease_token,
        reason_code=code,
        hold_until=timezone.now() + timedelta(hours=hours),
    )
    return leased


def test_my_holds_are_listed_with_reason_until_and_deadline_and_go_on_resume(queue, alice, bob):
    add_hold_reasons(queue)
    due = timezone.now() + timedelta(hours=3)
    item(queue, "k1", subject="Passport renewal", due_at=due)
    item(queue, "k2", subject="Utility bill", due_at=due)
    mine = put_on_hold(queue, alice, hours=2)
    theirs = put_on_hold(queue, bob, hours=1, code="customer_contacted")

    [hold] = my_holds(reviewer_id=alice.pk)
    assert (hold.id, hold.reason_code, hold.reason_label) == (
        mine.pk,
        "awaiting_documents",
        "Awaiting documents",
    )
    assert hold.hold_until > timezone.now() + timedelta(minutes=119)
    assert hold.due_at > due  # the deadline paused while held: pushed back by the hold
    assert [h.id for h in my_holds(reviewer_id=bob.pk)] == [theirs.pk]

    page = login(alice).get("/my-work/").content.decode()
    assert f"#{mine.pk} &mdash; Passport renewal" in page
    assert "Awaiting documents" in page
    assert "Utility bill" not in page and "Customer contacted" not in page

    # New evidence brings it back: no longer mine on hold.
    replace_evidence(item_id=mine.pk, actor=bob, payload={"documents": ["passport"]})
    assert my_holds(reviewer_id=alice.pk) == []
    assert "no item you put on hold is waiting" in login(alice).get("/my-work/").content.decode()
    # Claimed again and held by someone else: theirs now, not mine.
    assert put_on_hold(queue, bob, hours=1).pk == mine.pk
    assert my_holds(reviewer_id=alice.pk) == []
    assert {h.id for h in my_holds(reviewer_id=bob.pk)} == {mine.pk, theirs.pk}


def test_the_holds_statement_reads_only_open_holds_through_their_index(queue, alice):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + mywork_sql.MY_HOLDS, {"reviewer": alice.pk, "limit": 100})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "item_held_until" in plan, plan
    # Each held row probes its own events by item id: never a scan of the event log.
    assert "Index Cond: (item_id = i.id)" in plan, plan
    assert "Seq Scan" not in plan, plan


def _qa_review_all(queue, qa_user, disagree_with: set[int]) -> None:
    """QA-review every open QA task of the queue, disagreeing with the decisions named."""
    while (task := claim_lane_task(queue=queue, kind="qa", user=qa_user)) is not None:
        disagree = task.decision_id in disagree_with
        record_qa_review(
            task_id=task.pk,
            user=qa_user,
            lease_token=task.lease_token,
            verdict="reject" if disagree else "approve",
            reason_code="fraud" if disagree else "verified",
        )


def test_my_agreement_is_computed_from_real_qa_reviews_and_is_mine_only(queue, alice, bob, carol):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    alices = [decide_one(queue, alice) for _ in range(3)]
    decide_one(queue, bob)
    assert LaneTask.objects.filter(kind="qa").count() == 4
    # Before any QA review: the page says so.
    assert "No QA reviews of your decisions yet" in login(alice).get("/my-work/").content.decode()

    _qa_review_all(queue, carol, disagree_with={alices[0].pk})

    windows = my_agreement(reviewer_id=alice.pk)
    assert [w.window for w in windows] == ["today", "week", "month"]
    for w in windows:
        assert (w.verdict.hits, w.verdict.n) == (2, 3)
    low, high = wilson_interval(2, 3)
    assert windows[-1].verdict.interval == (low, high)
    [bobs] = {(w.verdict.hits, w.verdict.n) for w in my_agreement(reviewer_id=bob.pk)}
    assert bobs == (1, 1)
    # The QA reviewer's own decisions were never reviewed.
    assert my_agreement(reviewer_id=carol.pk) == []

    page = login(alice).get("/my-work/").content.decode()
    assert "QA agreement with my decisions" in page
    assert "67%" in page and f"{low:.0%} to {high:.0%}" in page
    # Bob's 100 % of 1 is not on Alice's page.
    assert "100%" not in page and "21% to 100%" not in page
    bob_page = login(bob).get("/my-work/").content.decode()
    assert "100%" in bob_page and "67%" not in bob_page
    assert "No QA reviews of your decisions yet" in login(carol).get("/my-work/").content.decode()
    # The figures are those /ops/ shows for the same reviewer.
    from queue_app.selectors.agreement import agreement_by_reviewer

    ops = {r["reviewer"]: r["agreement"].verdict for r in agreement_by_reviewer()}
    assert ops["alice"] == my_work(reviewer_id=alice.pk).agreement[-1].verdict


def test_agreement_windows_split_by_when_the_qa_review_was_recorded(queue, alice, carol):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice)
    decide_one(queue, alice)
    _qa_review_all(queue, carol, disagree_with=set())
    # Seen from 8 days on, no review falls in today or the week; the month keeps both
    # (the statement's own window is the database's clock, so both are still read).
    later = timezone.now() + timedelta(days=8)
    by = {w.window: w.verdict for w in my_agreement(reviewer_id=alice.pk, now=later)}
    assert (by["today"].n, by["week"].n, by["month"].n) == (0, 0, 2)
    assert by["today"].interval is None
