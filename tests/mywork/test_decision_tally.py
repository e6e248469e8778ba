"""The decision tally: My work's window counts from rows kept by a trigger on each decision,
equal to counting the decisions themselves, under real concurrent commits too."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, InternalError, ProgrammingError, connection, transaction
from django.utils import timezone

from queue_app.db.statements import lanes as lanes_sql
from queue_app.models import CheckPolicy, CheckTally, Decision, DecisionTally, Queue
from queue_app.selectors.my_work import MONTH, WEEK, my_work, start_of_today
from queue_app.services import (
    claim_lane_task,
    claim_next,
    confirm_check,
    create_item,
    overturn_decision,
    return_check,
)
from tests.blocking import Session, wait_until_blocked_by_me
from tests.conftest import make_items, make_queue
from tests.console.conftest import login
from tests.lanes.test_returned_decision_story import _decide
from tests.mywork.test_my_work import decide

pytestmark = pytest.mark.django_db


@pytest.fixture
def checked_queue(reviewers_group) -> Queue:
    """Write-offs (approve) at or above 1000.00 need a check (as in tests/lanes)."""
    queue = make_queue("recon", group=reviewers_group, lease_ttl=timedelta(minutes=5))
    CheckPolicy.objects.create(
        queue=queue, verdict="approve", path="variance_amount", threshold=Decimal("1000.00")
    )
    return queue


@pytest.fixture
def carol(reviewers_group) -> User:
    user = User.objects.create_user("carol", password="pw-carol")
    user.groups.add(reviewers_group)
    return user


# My work's counts as they were read before the tally: every decision of the window with its
# status. The reference the tally must equal.
DIRECT_COUNTS = """
SELECT d.queue_id, d.verdict,
       CASE WHEN s.status IN ('awaiting_check', 'returned') THEN s.status END AS held,
       count(*) FILTER (WHERE d.created_at >= %(today)s) AS today,
       count(*) FILTER (WHERE d.created_at >= %(week)s) AS week,
       count(*) AS month,
       count(*) FILTER (WHERE s.status = 'overturned') AS overturned
  FROM queue_app_decision AS d
  JOIN queue_app_decisionstatus AS s ON s.decision_id = d.id
 WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(month)s AND d.verdict <> 'overturn'
 GROUP BY d.queue_id, d.verdict, held
"""


def _direct(reviewer: User) -> set[tuple]:
    now = timezone.now()
    params = {
        "reviewer": reviewer.pk,
        "today": start_of_today(now),
        "week": now - WEEK,
        "month": now - MONTH,
    }
    with connection.cursor() as cursor:
        cursor.execute(DIRECT_COUNTS, params)
        return set(cursor.fetchall())


def _from_tally(reviewer: User) -> set[tuple]:
    return {
        (q.queue_id, v.verdict, v.held, v.today, v.week, v.month, v.overturned)
        for q in my_work(reviewer_id=reviewer.pk).counts
        for v in q.verdicts
    }


def _tally_equals_decisions() -> None:
    tally = Counter(
        {(t.reviewer_id, t.queue_id, t.verdict): t.decisions for t in DecisionTally.objects.all()}
    )
    direct = Counter((d.reviewer_id, d.queue_id, d.verdict) for d in Decision.objects.all())
    assert +tally == direct


def test_my_work_counts_equal_the_decisions_counted_one_by_one(
    queue, checked_queue, alice, bob, carol
):
    make_items(queue, 4)
    plain = [decide(queue, alice), decide(queue, alice, "reject", "fraud"), decide(queue, alice)]
    decide(queue, bob)  # not alice's
    # Two write-offs that need a check: one returned by carol, one still awaiting it.
    _decide(checked_queue, alice, "w1")
    _decide(checked_queue, alice, "w2")
    # And one below the check's threshold: it stands, on the row the held ones leave.
    create_item(
        queue=checked_queue,
        subject="Write-off small",
        payload={"variance_amount": "10.00"},
        idempotency_key="w3",
    )
    decide(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    assert task is not None
    return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="Wrong ledger")
    # One of her plain verdicts overturned: still hers, counted as overturned.
    root = User.objects.create_superuser("root", password="pw-root")
    overturn_decision(
        decision_id=plain[0].pk,
        admin=root,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )

    assert _from_tally(alice) == _direct(alice)
    held = {
        (v.verdict, v.held, v.overturned)
        for q in my_work(reviewer_id=alice.pk).counts
        for v in q.verdicts
    }
    assert ("approve", "returned", 0) in held
    assert ("approve", "awaiting_check", 0) in held
    assert ("approve", None, 1) in held
    assert _from_tally(bob) == _direct(bob)
    # The overturn is counted in the tally (root's, a correction), never in My work.
    _tally_equals_decisions()


def test_the_tally_cannot_be_written_by_hand(queue, alice):
    make_items(queue, 1)
    decide(queue, alice)
    for statement in (
        "UPDATE queue_app_decisiontally SET decisions = decisions + 1",
        "DELETE FROM queue_app_decisiontally",
        "INSERT INTO queue_app_decisiontally VALUES (1, now(), 1, 'approve', 1)",
    ):
        with (
            pytest.raises((InternalError, ProgrammingError, IntegrityError)) as refused,
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)
        assert "queue_app_decisiontally is written by its trigger only" in str(refused.value)
    _tally_equals_decisions()


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_deciding_at_once_do_not_wait_for_each_other(queue, alice, bob):
    make_items(queue, 2)
    bobs_item = claim_next(queue=queue, reviewer=bob)
    assert bobs_item is not None
    with transaction.atomic():
        decide(queue, alice)  # her tally row written, its lock held until this commits
        # Bob decides on his own connection and commits while alice's transaction is open:
        # his row is his own, so he never waits for her.
        other = Session(lambda: decide(queue, bob))
        other.start()
        other.outcome()
    _tally_equals_decisions()
    assert sum(t.decisions for t in DecisionTally.objects.filter(reviewer_id=bob.pk)) == 1


@pytest.mark.django_db(transaction=True)
def test_one_row_written_by_two_transactions_at_once_counts_both(queue, alice, bob):
    make_items(queue, 2)
    mine = [decide(queue, alice), decide(queue, alice)]
    root = User.objects.create_superuser("root", password="pw-root")

    def overturn(decision: Decision) -> Decision:
        return overturn_decision(
            decision_id=decision.pk,
            admin=User.objects.get(pk=root.pk),
            corrected_verdict="reject",
            reason_code="reviewer_error",
        )

    # Two overturns by one admin, one queue, one day: one tally row. The second
    # waits for the first's row (its insert, uncommitted), then adds to it.
    with transaction.atomic():
        overturn(mine[0])
        second = Session(lambda: overturn(mine[1]))
        second.start()
        wait_until_blocked_by_me(second)
    second.outcome()

    [row] = DecisionTally.objects.filter(reviewer_id=root.pk)
    assert (row.verdict, row.decisions) == ("overturn", 2)
    _tally_equals_decisions()


def test_a_window_start_inside_a_day_counts_only_what_follows_it(queue, alice):
    """The part-day before a window's first whole day is read from the decisions."""
    make_items(queue, 1)
    decision = decide(queue, alice)
    just_after = decision.created_at + timedelta(microseconds=1)
    # 30 days later, to the microsecond after the decision: the month no longer holds it.
    later = my_work(reviewer_id=alice.pk, now=just_after + MONTH)
    assert later.totals == {"today": 0, "week": 0, "month": 0}
    at = my_work(reviewer_id=alice.pk, now=decision.created_at + MONTH)
    assert at.totals["month"] == 1


def test_the_page_says_when_handling_time_is_a_sample(queue, alice, monkeypatch):
    make_items(queue, 2)
    decide(queue, alice)
    page = login(alice).get("/my-work/").content.decode()
    assert "Measured on your newest" not in page
    monkeypatch.setattr("queue_app.selectors.my_work.HANDLING_SAMPLE", 1)
    decide(queue, alice)
    work = my_work(reviewer_id=alice.pk)
    assert work.handling_sample == 1
    assert [h.month_samples for h in work.handling] == [1]
    page = login(alice).get("/my-work/").content.decode()
    assert "Measured on your newest 1 decisions of the last 30 days" in page


# The checks finished in 30 days as they were read before the check tally.
DIRECT_CHECKS = """
SELECT q.slug, count(*) AS total, count(*) FILTER (WHERE o.result = 'returned') AS returned
  FROM queue_app_laneoutcome AS o
  JOIN queue_app_lanetask AS t ON t.id = o.task_id
  JOIN queue_app_queue AS q ON q.id = t.queue_id
 WHERE o.kind = 'check' AND o.created_at >= now() - %(window)s
 GROUP BY q.slug
"""


def test_checks_finished_equal_the_outcomes_counted_one_by_one(checked_queue, alice, carol):
    for key in ("c1", "c2", "c3"):
        _decide(checked_queue, alice, key)
    for finish in (return_check, confirm_check, confirm_check):
        task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
        assert task is not None
        kwargs = {"note": "Wrong ledger"} if finish is return_check else {}
        finish(task_id=task.pk, user=carol, lease_token=task.lease_token, **kwargs)

    window = {"window": timedelta(days=30)}
    with connection.cursor() as cursor:
        cursor.execute(DIRECT_CHECKS, window)
        direct = set(cursor.fetchall())
        cursor.execute(lanes_sql.CHECKS_FINISHED, window)
        tallied = set(cursor.fetchall())
    assert tallied == direct == {("recon", 3, 1)}
    rows = {(c.result, c.checks) for c in CheckTally.objects.all()}
    assert rows == {("returned", 1), ("confirmed", 2)}
    with (
        pytest.raises((InternalError, ProgrammingError, IntegrityError)) as refused,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE queue_app_checktally SET checks = checks + 1")
    assert "queue_app_checktally is written by its trigger only" in str(refused.value)
