"""My work: a reviewer's own decisions by window, handling time as /ops/ measures it, the
items they hold, and a bounded search over their decisions."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from queue_app.db.statements import mywork as mywork_sql
from queue_app.models import Decision
from queue_app.selectors.my_work import my_work, next_utc_midnight, search_my_decisions
from queue_app.selectors.queue_figures import read_snapshot
from queue_app.services import claim_next, submit_decision
from tests.conftest import make_items, shown_hash
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


def decide(queue, reviewer, verdict: str = "approve", reason: str = "verified") -> Decision:
    item = claim_next(queue=queue, reviewer=reviewer)
    return submit_decision(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=item.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(item),
    )


def claimed_seconds_before(decision: Decision, seconds: int) -> None:
    """Move the claim the decision was made under back in time (events are append-only, so
    with user triggers off for this one statement, as a restore would)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE queue_app_itemevent SET at = %s WHERE item_id = %s AND kind = 'claimed'",
            [decision.created_at - timedelta(seconds=seconds), decision.item_id],
        )
        cursor.execute("SET LOCAL session_replication_role = origin")


def test_it_counts_my_verdicts_by_queue_and_window(queue, alice, bob):
    make_items(queue, 6)
    for verdict, reason in [("approve", "verified"), ("approve", "verified"), ("reject", "fraud")]:
        decide(queue, alice, verdict, reason)
    decide(queue, bob)  # not mine

    now = timezone.now()
    [kyc] = my_work(reviewer_id=alice.pk, now=now).counts
    assert [(v.verdict, v.today, v.week, v.month) for v in kyc.verdicts] == [
        ("approve", 2, 2, 2),
        ("reject", 1, 1, 1),
    ]
    # Two days on: not today any more, still in the week; ten days on: only the month.
    later = my_work(reviewer_id=alice.pk, now=now + timedelta(days=2))
    assert later.totals == {"today": 0, "week": 3, "month": 3}
    assert my_work(reviewer_id=alice.pk, now=now + timedelta(days=10)).totals == {
        "today": 0,
        "week": 0,
        "month": 3,
    }
    assert my_work(reviewer_id=alice.pk, now=now + timedelta(days=31)).counts == []


def test_handling_time_is_measured_as_ops_measures_it(queue, alice):
    make_items(queue, 2)
    fast, slow = decide(queue, alice), decide(queue, alice)
    claimed_seconds_before(fast, 30)
    claimed_seconds_before(slow, 90)

    [handling] = my_work(reviewer_id=alice.pk).handling
    assert handling.month_samples == 2
    assert handling.month_p50 == timedelta(seconds=60)
    assert handling.month_p90 == timedelta(seconds=84)
    # /ops/ reads the same two decisions the same way.
    ops = next(f for f in read_snapshot().queues if f.slug == "kyc")
    assert (ops.ttd_p50, ops.ttd_p90) == (handling.month_p50, handling.month_p90)


def test_it_lists_the_items_i_hold_and_no_one_elses(queue, alice, bob):
    make_items(queue, 3)
    mine = claim_next(queue=queue, reviewer=alice)
    claim_next(queue=queue, reviewer=bob)
    assert [i.pk for i in my_work(reviewer_id=alice.pk).leases] == [mine.pk]
    page = login(alice).get("/my-work/").content.decode()
    assert f"#{mine.pk} &mdash; {mine.subject}" in page


def test_search_finds_my_decisions_by_subject_item_and_day(queue, alice, bob):
    items = make_items(queue, 4, prefix="Passport")
    mine = [decide(queue, alice) for _ in range(3)]
    theirs = decide(queue, bob)

    by_subject = search_my_decisions(reviewer_id=alice.pk, subject="passport 1")
    assert [d.pk for d in by_subject] == [mine[1].pk]
    assert [d.pk for d in search_my_decisions(reviewer_id=alice.pk, item_id=mine[2].item_id)] == [
        mine[2].pk
    ]
    assert search_my_decisions(reviewer_id=alice.pk, item_id=theirs.item_id).count() == 0
    today = timezone.localdate()
    assert {d.pk for d in search_my_decisions(reviewer_id=alice.pk, day=today)} == {
        d.pk for d in mine
    }
    assert not search_my_decisions(reviewer_id=alice.pk, day=today - timedelta(days=1)).exists()
    assert len(items) == 4


def test_the_subject_search_finds_the_start_of_words_never_a_substring(queue, alice):
    make_items(queue, 1, prefix="Smith, Anne: passport")
    make_items(queue, 1, prefix="Joanne Smith-Baker")
    anne, joanne = decide(queue, alice), decide(queue, alice)

    def found(subject: str) -> set[int]:
        return {d.pk for d in search_my_decisions(reviewer_id=alice.pk, subject=subject)}

    assert found("ann") == {anne.pk}  # a word's start, not the middle of Joanne
    assert found("SMITH") == {anne.pk, joanne.pk}
    assert found("pass smi") == {anne.pk}  # every word, in any order
    assert found("baker jo") == {joanne.pk}
    assert found("ann nobody") == set()
    # Query operators are separators, never operators; no words: nothing to find.
    assert found("a & b | !(c):* '\\") == set()
    assert found("ann:* | jo") == set()
    assert found("&|!():*'\\") == set()
    assert found("") == {anne.pk, joanne.pk}  # no subject given: every decision of mine
    page = login(alice).get("/my-work/", {"subject": "a & b | !(c):* '\\"})
    assert page.status_code == 200
    assert page.context["results"] == []


def test_the_page_searches_and_says_what_is_wrong_with_a_search(queue, alice):
    make_items(queue, 2, prefix="Utility bill")
    decision = decide(queue, alice)
    client = login(alice)
    found = client.get("/my-work/", {"subject": "utility"})
    assert found.status_code == 200
    assert f"#{decision.item_id} &mdash; Utility bill 0" in found.content.decode()
    bad = client.get("/my-work/", {"day": "yesterday", "item": "-3"})
    assert bad.status_code == 200
    text = bad.content.decode()
    assert "Enter a date as YYYY-MM-DD." in text
    assert "greater than or equal to 1" in text
    assert bad.context["results"] is None


def test_a_subject_search_alone_says_how_far_back_it_looked(queue, alice, monkeypatch):
    # A subject search alone reads the reviewer's newest SUBJECT_SEARCH_SCOPE decisions (a
    # bound that keeps it flat over years of history); when that is not the whole window, the
    # page says how far back it looked and how to look further.
    from queue_app.mywork import views
    from queue_app.selectors import my_work as figures

    for module in (figures, views):
        monkeypatch.setattr(module, "SUBJECT_SEARCH_SCOPE", 2)
    make_items(queue, 3, prefix="Passport")
    oldest, middle, newest = (decide(queue, alice) for _ in range(3))
    client = login(alice)
    page = client.get("/my-work/", {"subject": "passport"})
    assert [d.pk for d in page.context["results"]] == [newest.pk, middle.pk]
    assert page.context["reach"] == middle.created_at
    assert "Searched your newest 2 decisions, back to" in page.content.decode()
    # With a day, every decision of that day is searched, and nothing is said.
    day = client.get("/my-work/", {"subject": "passport", "day": timezone.localdate()})
    assert {d.pk for d in day.context["results"]} == {oldest.pk, middle.pk, newest.pk}
    assert day.context["reach"] is None
    assert "Searched your newest" not in day.content.decode()
    # A scope that holds the whole window says nothing either.
    for module in (figures, views):
        monkeypatch.setattr(module, "SUBJECT_SEARCH_SCOPE", 3)
    whole = client.get("/my-work/", {"subject": "passport"})
    assert len(whole.context["results"]) == 3 and whole.context["reach"] is None


def test_the_page_costs_the_same_queries_however_much_work(queue, alice):
    client = login(alice)

    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get("/my-work/", {"subject": "item"})
        assert response.status_code == 200
        return len(ctx.captured_queries)

    make_items(queue, 9)
    decide(queue, alice)
    client.get("/my-work/")  # warm: session, user
    one = queries()
    for _ in range(8):
        decide(queue, alice)
    assert queries() == one


def _load_other_reviewers_history(queue, reviewer, n: int = 5000) -> None:
    """n decided items, decided by someone else over the last 60 days, then ANALYZE: a table
    the planner believes is large, so the plan is the one production gets (a tiny table, or
    statistics another test left, would make a whole-table read the right call)."""
    reason = queue.reason_codes.get(verdict="approve", code="verified")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_reviewitem
                   (queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                    idempotency_key, source_hash, trace_id, lease_count, decided_at, review_round)
            SELECT %(queue)s, %(queue)s, 'decided', 0, now(), 'bulk ' || g, '{}',
                   'bulk-' || g, '', gen_random_uuid(), 1, now(), 0
              FROM generate_series(1, %(n)s) AS g
            """,
            {"queue": queue.pk, "n": n},
        )
        # The decision triggers look each item up: with statistics, by its primary key.
        cursor.execute("ANALYZE queue_app_reviewitem")
        cursor.execute(
            """
            INSERT INTO queue_app_decision
                   (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash,
                    note, created_at, chain_hash, lease_token)
            SELECT id, queue_id, %(reviewer)s, 'approve', %(reason)s, repeat('0', 64), '',
                   now() - (id %% 60) * interval '1 day', '', gen_random_uuid()
              FROM queue_app_reviewitem
             WHERE subject LIKE 'bulk %%'
            """,
            {"reviewer": reviewer.pk, "reason": reason.pk},
        )
        cursor.execute("ANALYZE queue_app_decision")
        cursor.execute("ANALYZE queue_app_itemevent")


@pytest.mark.parametrize("statement", ["MY_DECISION_COUNTS", "MY_HANDLING_TIME"])
def test_the_statements_read_through_the_reviewer_index(queue, alice, bob, statement):
    make_items(queue, 2)
    decide(queue, alice)
    _load_other_reviewers_history(queue, bob)
    now = timezone.now()
    params = {"reviewer": alice.pk, "today": now, "week": now, "month": now - timedelta(days=30)}
    params |= {f"{w}_day": next_utc_midnight(params[w]) for w in ("today", "week", "month")}
    params["sample"] = 2000
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + getattr(mywork_sql, statement), params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # Either index on the reviewer: which one is cheaper depends on how big each has grown
    # (tests before this one leave rolled-back entries in both).
    assert re.search(r"decision_reviewer_recent|queue_app_decision_reviewer_id", plan), plan
    assert "Seq Scan on queue_app_decision" not in plan, plan
