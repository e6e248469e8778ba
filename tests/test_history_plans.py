"""What keeps the pages flat as the history grows (B10, bench/b10.py): the plans the planner
could get wrong, and the admin's bounded count."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.utils import timezone

from queue_app.admin import pagination
from queue_app.db.statements import lanes as lanes_sql
from queue_app.db.statements import oversight as oversight_sql
from queue_app.models import Decision, ReviewItem
from queue_app.selectors.oversight import BAND_FLOORS
from tests.conftest import make_items, triggers_off
from tests.plans import nodes_reading, plan_of

pytestmark = pytest.mark.django_db

HISTORY = 20_000


def _load_history(queue, reviewer: User, *, open_tasks_by: User) -> None:
    """HISTORY decided items, each with a decision by reviewer (years of their work), and a few
    open checks on other people's decisions; then ANALYZE, so the planner knows."""
    reason = queue.reason_codes.filter(verdict="approve").first()
    with triggers_off("queue_app_decision", "queue_app_lanetask", foreign_keys=True) as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_reviewitem
                (queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                 idempotency_key, source_hash, trace_id, lease_count, decided_at)
            SELECT %(queue)s, %(queue)s, 'decided', 0, now() - make_interval(mins => g),
                   'history ' || g, '{}'::jsonb, 'history-' || g, '', gen_random_uuid(), 1,
                   now() - make_interval(mins => g)
              FROM generate_series(1, %(n)s) AS g
            """,
            {"queue": queue.pk, "n": HISTORY + 5},
        )
        cursor.execute(
            """
            INSERT INTO queue_app_decision
                (item_id, queue_id, reviewer_id, reviewer_username, verdict, reason_code_id,
                 evidence_hash, note, lease_token, created_at, chain_hash, review_round)
            SELECT i.id, i.queue_id,
                   CASE WHEN row_number() OVER (ORDER BY i.id) <= 5 THEN %(other)s
                        ELSE %(reviewer)s END,
                   '', 'approve', %(reason)s, repeat('a', 64), '', gen_random_uuid(),
                   i.decided_at, '', 0
              FROM queue_app_reviewitem AS i WHERE i.subject LIKE 'history %%'
            """,
            {"reviewer": reviewer.pk, "other": open_tasks_by.pk, "reason": reason.pk},
        )
        cursor.execute(
            """
            INSERT INTO queue_app_lanetask
                (kind, queue_id, item_id, decision_id, maker_id, maker_principal_id, state,
                 lease_count, created_at)
            SELECT 'check', d.queue_id, d.item_id, d.id, d.reviewer_id, d.reviewer_id, 'open',
                   0, d.created_at
              FROM queue_app_decision AS d WHERE d.reviewer_id = %(other)s
            """,
            {"other": open_tasks_by.pk},
        )
        cursor.execute("ANALYZE queue_app_reviewitem")
        cursor.execute("ANALYZE queue_app_decision")
        cursor.execute("ANALYZE queue_app_lanetask")


def test_home_lanes_find_a_users_part_from_the_open_tasks_not_from_their_history(queue, alice, bob):
    # The console home counts each lane's open tasks alice may take. Whether she has a part in a
    # task's item is probed per open task by the item indexes; read from her side it would be
    # every decision she ever made (as EXISTS, the planner turns it into exactly that: a hashed
    # subplan over her decisions), and the home page grew with her history (B10: 11x).
    _load_history(queue, alice, open_tasks_by=bob)
    plan = plan_of(lanes_sql.LANES_FOR_USER, {"owner_id": alice.pk, "queue_ids": [queue.pk]})
    decision_reads = nodes_reading(plan, "queue_app_decision")
    assert decision_reads, "the statement no longer reads decisions: update this test"
    for node in decision_reads:
        assert node["Node Type"] == "Index Scan", node
        assert node["Index Name"].startswith(("queue_app_decision_item_id", "decision_one_per")), (
            node
        )
    assert "queue_app_part_items" not in json.dumps(plan)


def test_my_qa_agreement_reads_my_reviews_of_the_window_not_the_teams(queue, alice, bob):
    # My work's agreement: one reviewer's QA reviews of 30 days. Read from the window's every
    # QA review it cost what the whole team's month holds, in a parallel plan at ten million
    # decisions (B10); lanetask_qa_maker gives the reviewer's own month. Here 20,000 QA reviews
    # over two years, a tenth of them of alice's decisions: about 70 in her month.
    _load_history(queue, alice, open_tasks_by=bob)
    qa = User.objects.create_user("qa-reviewer")
    with triggers_off("queue_app_lanetask", "queue_app_laneoutcome", foreign_keys=True) as cur:
        cur.execute(
            """
            INSERT INTO queue_app_lanetask
                (kind, queue_id, item_id, decision_id, maker_id, maker_principal_id, state,
                 lease_owner_id, lease_token, lease_expires, lease_count, created_at, done_at)
            SELECT 'qa', d.queue_id, d.item_id, d.id, m.maker, m.maker, 'done', %(qa)s,
                   gen_random_uuid(), m.done + interval '1 hour', 1, m.done, m.done
              FROM queue_app_decision AS d
             CROSS JOIN LATERAL (SELECT CASE WHEN d.id %% 10 = 0 THEN %(alice)s
                                             ELSE %(bob)s END AS maker,
                                        now() - make_interval(hours => (d.id %% 20000)::int)
                                            AS done) AS m
            """,
            {"alice": alice.pk, "bob": bob.pk, "qa": qa.pk},
        )
        cur.execute(
            """
            INSERT INTO queue_app_laneoutcome
                (task_id, kind, result, actor_id, actor_username, lease_token, verdict,
                 reason_code_id, agrees_verdict, agrees_reason, note, created_at)
            SELECT t.id, 'qa', 'reviewed', t.lease_owner_id, '', t.lease_token, d.verdict,
                   d.reason_code_id, true, true, '', t.done_at
              FROM queue_app_lanetask AS t JOIN queue_app_decision AS d ON d.id = t.decision_id
             WHERE t.kind = 'qa'
            """,
        )
        cur.execute("ANALYZE queue_app_lanetask")
        cur.execute("ANALYZE queue_app_laneoutcome")
    params = {"window": timedelta(days=30), "queue_id": None}
    mine = plan_of(lanes_sql.QA_REVIEWS_IN_WINDOW, {**params, "reviewer_id": alice.pk})
    assert _indexes_read(mine, "queue_app_lanetask") == {"lanetask_qa_maker"}
    # Everyone's (/ops/) reads the window of outcomes.
    everyone = plan_of(lanes_sql.QA_REVIEWS_IN_WINDOW, {**params, "reviewer_id": None})
    assert "laneoutcome_kind_at" in _indexes_read(everyone, "queue_app_laneoutcome")


def test_the_oversight_window_reads_only_decisions_with_a_suggestion(queue, alice, bob):
    # /metrics and /ops/: a window of the decisions that had a machine suggestion. None of the
    # history loaded here had one: the partial index answers without reading the window.
    _load_history(queue, alice, open_tasks_by=bob)
    assert not Decision.objects.filter(suggestion_view__isnull=False).exists()
    for statement in (oversight_sql.SUGGESTION_FOLLOWING, oversight_sql.AUTOMATIC_DECISIONS_QA):
        plan = plan_of(statement, {"window": timedelta(days=90), "band_floors": list(BAND_FLOORS)})
        indexes = {node.get("Index Name") for node in nodes_reading(plan, "queue_app_decision")}
        assert indexes == {"decision_suggested_at"}, indexes


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", password="pw-root")


def test_the_admin_counts_a_long_list_only_up_to_its_bound(queue, root, monkeypatch):
    monkeypatch.setattr(pagination, "COUNT_CAP", 3)
    make_items(queue, 5)
    client = Client()
    client.force_login(root)
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        page = client.get("/admin/queue_app/reviewitem/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "more than 3 review items" in text
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert counts, "the changelist counted nothing"
    # Every count over the items is bounded: LIMIT cap + 1 inside it.
    item_counts = [sql for sql in counts if "queue_app_reviewitem" in sql]
    assert item_counts and all("LIMIT 4" in sql for sql in item_counts), item_counts
    # A list within the bound is counted exactly, as before.
    monkeypatch.setattr(pagination, "COUNT_CAP", 10)
    text = client.get("/admin/queue_app/reviewitem/").content.decode()
    assert f"{ReviewItem.objects.count()} review items" in text
    assert "more than" not in text


def test_the_admin_shows_an_estimate_where_counting_would_read_every_row(queue, root, settings):
    # The item list's "times leased" filter: no index serves lease_count (one would cost every
    # claim its HOT update), so its bounded count read every item to find fewer than 10,001
    # (B10: 3.2x). Where the planner expects a count to cost more than the setting, the page
    # shows the planner's estimate, marked, and runs no count.
    from django.test.utils import CaptureQueriesContext

    make_items(queue, 5)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE queue_app_reviewitem")
    client = Client()
    client.force_login(root)
    settings.REVIEW_ADMIN_COUNT_COST = 0
    with CaptureQueriesContext(connection) as queries:
        text = client.get("/admin/queue_app/reviewitem/?leases=0").content.decode()
    assert "about 5 review items (an estimate" in text
    assert not [
        q["sql"]
        for q in queries.captured_queries
        if "COUNT(" in q["sql"].upper() and "queue_app_reviewitem" in q["sql"]
    ]
    # Under the setting's default the same small list is counted exactly.
    settings.REVIEW_ADMIN_COUNT_COST = 20000.0
    text = client.get("/admin/queue_app/reviewitem/?leases=0").content.decode()
    assert "5 review items" in text and "estimate" not in text


# The subjects "histo 1234" finds in the history: words starting with histo and with 1234.
PREFIXED_1234 = {f"history {n}" for n in (1234, *range(12340, 12350))}


def _querysetplan_of(queryset) -> dict:
    [explained] = json.loads(queryset.explain(format="json"))
    return explained["Plan"]


def _indexes_read(plan: dict, relation: str) -> set[str]:
    """The indexes the plan reads the relation by; a sequential scan of it fails the test."""
    nodes = nodes_reading(plan, relation)
    assert nodes, f"the plan no longer reads {relation}: update this test"
    indexes = set()
    for node in nodes:
        assert node["Node Type"] != "Seq Scan", node
        # A bitmap heap scan names its indexes in the bitmap index scans below it.
        bitmaps = [node]
        while bitmaps:
            below = bitmaps.pop()
            if "Index Name" in below:
                indexes.add(below["Index Name"])
            bitmaps += [child for child in below.get("Plans", []) if "Bitmap" in child["Node Type"]]
    return indexes


def _admin_search(model, term: str, user: User):
    """The changelist's queryset for a search, as the admin builds it."""
    from django.contrib import admin
    from django.test import RequestFactory

    request = RequestFactory().get("/", {"q": term})
    request.user = user
    queryset, _ = admin.site._registry[model].get_search_results(request, model.objects.all(), term)
    return queryset


def test_the_admin_item_search_reads_the_words_index_not_every_subject(queue, alice, bob, root):
    # A substring search read every item (B10: 7.0x at 2,000,000 decisions); the words of a
    # subject are in item_subject_words, and only the expression it holds can use it.
    _load_history(queue, alice, open_tasks_by=bob)
    found = _admin_search(ReviewItem, "histo 1234", root)
    assert set(found.values_list("subject", flat=True)) == PREFIXED_1234
    for queryset in (found.order_by("-id")[:51], found.order_by()[: pagination.COUNT_CAP + 1]):
        assert _indexes_read(_querysetplan_of(queryset), "queue_app_reviewitem") == {
            "item_subject_words"
        }


def test_my_work_subject_search_reads_a_bounded_scope_of_my_decisions(
    queue, alice, bob, monkeypatch
):
    # Alone, a subject search reads the reviewer's newest decisions and their items by primary
    # key, never every item (B10: 3.7x) and never the words index, whose answer is every item
    # ever bearing a word and grew with the history (B10: 5.6x with a common word).
    from queue_app.db.statements import mywork as mywork_sql
    from queue_app.models.subject_search import prefix_query
    from queue_app.selectors import my_work
    from queue_app.selectors.my_work import search_my_decisions

    _load_history(queue, alice, open_tasks_by=bob)
    # Her decisions are a minute apart, newest first: 'history 1234' is within her newest
    # 5,000, 'history 12340' to '12349' are not, until the scope holds them.
    found = search_my_decisions(reviewer_id=alice.pk, subject="history 1234")
    assert {d.item.subject for d in found} == {"history 1234"}
    monkeypatch.setattr(my_work, "SUBJECT_SEARCH_SCOPE", 20_000)
    found = search_my_decisions(reviewer_id=alice.pk, subject="history 1234")
    assert {d.item.subject for d in found} == PREFIXED_1234
    plan = plan_of(
        mywork_sql.MY_SUBJECT_SEARCH,
        {
            "reviewer": alice.pk,
            "since": timezone.now() - timedelta(days=365),
            "scope": 5000,
            "words": prefix_query("history 1234"),
            "limit": 50,
        },
    )
    assert _indexes_read(plan, "queue_app_reviewitem") == {"queue_app_reviewitem_pkey"}
    assert _indexes_read(plan, "queue_app_decision") == {"decision_reviewer_recent"}


def test_the_admin_decision_search_reads_reviewers_from_their_indexes(queue, alice, bob, root):
    # A username as a substring of every decision's read them all (B10: 3.0x); today's names
    # come from auth_user, the name as decided from decision_reviewer_name.
    _load_history(queue, alice, open_tasks_by=bob)
    by_name = _admin_search(Decision, "nobody", root)
    assert not by_name.exists()
    assert _indexes_read(_querysetplan_of(by_name.order_by()), "queue_app_decision") == {
        "decision_reviewer_name"
    }
    by_bob = _admin_search(Decision, "bo", root)
    assert by_bob.count() == 5
    indexes = _indexes_read(_querysetplan_of(by_bob.order_by()), "queue_app_decision")
    assert "decision_reviewer_name" in indexes, indexes
    assert indexes - {"decision_reviewer_name"} <= {
        "queue_app_decision_reviewer_id_e35be2f8",
        "decision_reviewer_recent",
    }, indexes


def test_the_applied_effects_list_reads_its_index_latest_first(queue, alice, bob):
    # The admin listed applied effects by sorting every one ever applied (B10: 2.6x).
    from queue_app.admin.outbox import AppliedDecisionAdmin
    from queue_app.models import AppliedDecision

    _load_history(queue, alice, open_tasks_by=bob)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO queue_app_applieddecision (decision_id, applied_at, outcome)"
            " SELECT id, created_at, '{}'::jsonb FROM queue_app_decision"
        )
        cursor.execute("ANALYZE queue_app_applieddecision")
    listed = AppliedDecision.objects.order_by(*AppliedDecisionAdmin.ordering, "-decision")[:50]
    plan = _querysetplan_of(listed)
    assert _indexes_read(plan, "queue_app_applieddecision") == {"applied_at_recent"}
    assert "Sort" not in json.dumps(plan), plan


def test_the_item_age_filter_reads_the_items_of_its_window(queue, alice, bob, root):
    # The item list's "under an hour" read every item to find the recent ones (B10: 1.8x).
    from django.contrib import admin
    from django.test import RequestFactory

    from queue_app.admin.filters import AgeFilter

    _load_history(queue, alice, open_tasks_by=bob)
    request = RequestFactory().get("/", {"age": "1h"})
    request.user = root
    model_admin = admin.site._registry[ReviewItem]
    age = AgeFilter(request, {"age": ["1h"]}, ReviewItem, model_admin)
    recent = age.queryset(request, ReviewItem.objects.all())
    assert 50 < recent.count() < 70
    for queryset in (recent.order_by("-id")[:51], recent.order_by()[: pagination.COUNT_CAP + 1]):
        assert _indexes_read(_querysetplan_of(queryset), "queue_app_reviewitem") == {
            "item_created_at"
        }
