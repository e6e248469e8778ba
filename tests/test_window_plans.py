"""What keeps My work's and /metrics' window figures flat as the history grows (B10): the tally
answers My work's counts, statuses are read only for decisions a check or an overturn touched,
handling time reads a bounded sample, and the window's lane tasks are probed, never read
whole."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from queue_app.db.statements import lanes as lanes_sql
from queue_app.db.statements import mywork as mywork_sql
from queue_app.selectors.my_work import MONTH, WEEK, next_utc_midnight, start_of_today
from tests.conftest import triggers_off
from tests.plans import nodes_reading, plan_of

pytestmark = pytest.mark.django_db

HISTORY = 20_000


def _load_history(queue, maker, checker, *, every_minutes: int = 30) -> None:
    """HISTORY decisions by maker, one every every_minutes back in time (400 days by default),
    each checked by checker (a done check task and its outcome a minute later); then ANALYZE."""
    reason = queue.reason_codes.filter(verdict="approve").first()
    with triggers_off(
        "queue_app_decision",
        "queue_app_lanetask",
        "queue_app_laneoutcome",
        "queue_app_decisiontally",
        "queue_app_checktally",
        foreign_keys=True,
    ) as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_reviewitem
                (queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                 idempotency_key, source_hash, trace_id, lease_count, decided_at)
            SELECT %(queue)s, %(queue)s, 'decided', 0, now() - make_interval(mins => %(m)s * g),
                   'window ' || g, '{}'::jsonb, 'window-' || g, '', gen_random_uuid(), 1,
                   now() - make_interval(mins => %(m)s * g)
              FROM generate_series(1, %(n)s) AS g
            """,
            {"queue": queue.pk, "n": HISTORY, "m": every_minutes},
        )
        cursor.execute(
            """
            INSERT INTO queue_app_decision
                (item_id, queue_id, reviewer_id, reviewer_username, verdict, reason_code_id,
                 evidence_hash, note, lease_token, created_at, chain_hash, review_round)
            SELECT i.id, i.queue_id, %(maker)s, '', 'approve', %(reason)s, repeat('a', 64), '',
                   gen_random_uuid(), i.decided_at, '', 0
              FROM queue_app_reviewitem AS i WHERE i.subject LIKE 'window %%'
            """,
            {"maker": maker.pk, "reason": reason.pk},
        )
        cursor.execute(
            """
            INSERT INTO queue_app_lanetask
                (kind, queue_id, item_id, decision_id, maker_id, maker_principal_id, state,
                 lease_count, created_at, done_at, lease_owner_id, lease_token, lease_expires)
            SELECT 'check', d.queue_id, d.item_id, d.id, d.reviewer_id, d.reviewer_id, 'done',
                   1, d.created_at, d.created_at + interval '1 minute', %(checker)s,
                   gen_random_uuid(), d.created_at + interval '5 minutes'
              FROM queue_app_decision AS d WHERE d.reviewer_id = %(maker)s
            """,
            {"maker": maker.pk, "checker": checker.pk},
        )
        cursor.execute(
            """
            INSERT INTO queue_app_laneoutcome
                (task_id, kind, result, actor_username, lease_token, verdict, note, created_at,
                 actor_id)
            SELECT t.id, 'check', 'confirmed', '', t.lease_token, '', '', t.done_at,
                   t.lease_owner_id
              FROM queue_app_lanetask AS t WHERE t.maker_id = %(maker)s
            """,
            {"maker": maker.pk},
        )
        # What the decision trigger would have written (it is off, as in a restore).
        cursor.execute(
            """
            INSERT INTO queue_app_decisiontally
                   (reviewer_id, day, queue_id, verdict, decisions)
            SELECT reviewer_id, date_trunc('day', created_at, 'UTC'), queue_id, verdict,
                   count(*)
              FROM queue_app_decision GROUP BY 1, 2, 3, 4
            """
        )
        cursor.execute(
            """
            INSERT INTO queue_app_checktally (day, queue_id, result, checker_id, checks)
            SELECT date_trunc('day', o.created_at, 'UTC'), k.queue_id, o.result, o.actor_id,
                   count(*)
              FROM queue_app_laneoutcome AS o JOIN queue_app_lanetask AS k ON k.id = o.task_id
             GROUP BY 1, 2, 3, 4
            """
        )
        for table in (
            "reviewitem",
            "decision",
            "lanetask",
            "laneoutcome",
            "decisiontally",
            "checktally",
        ):
            cursor.execute(f"ANALYZE queue_app_{table}")


def _my_work_params(reviewer_id: int) -> dict:
    now = timezone.now()
    params = {
        "reviewer": reviewer_id,
        "today": start_of_today(now),
        "week": now - WEEK,
        "month": now - MONTH,
        "sample": 2000,
    }
    for window in ("today", "week", "month"):
        params[f"{window}_day"] = next_utc_midnight(params[window])
    return params


def test_my_work_counts_read_the_tally_and_only_the_touched_decisions(queue, alice, bob):
    # Every one of alice's decisions had a check, the worst case for "touched": the checks are
    # still found through lanetask_check_maker within the window, never her whole history.
    _load_history(queue, alice, bob)
    plan = plan_of(mywork_sql.MY_DECISION_COUNTS, _my_work_params(alice.pk))
    assert nodes_reading(plan, "queue_app_decisiontally"), "the counts no longer read the tally"
    for relation in ("queue_app_decision", "queue_app_lanetask", "queue_app_decisiontally"):
        for node in nodes_reading(plan, relation):
            assert node["Node Type"] != "Seq Scan", (relation, node)
    text = json.dumps(plan)
    assert "lanetask_check_maker" in text
    assert "decision_overturn_at" in text


def test_my_handling_time_reads_a_bounded_sample_of_my_newest_decisions(queue, alice, bob):
    _load_history(queue, alice, bob)
    plan = plan_of(mywork_sql.MY_HANDLING_TIME, _my_work_params(alice.pk))
    limits = [n for n in json.dumps(plan).split('"Node Type": ') if n.startswith('"Limit"')]
    assert limits, "the sample is no longer bounded"
    for node in nodes_reading(plan, "queue_app_decision"):
        assert node["Node Type"] != "Seq Scan", node


def test_checks_finished_probe_each_task_of_the_window(queue, alice, bob):
    # Joined plainly, the planner hashed every lane task ever made (a sequential scan that grows
    # with the history) to match the window's outcomes.
    _load_history(queue, alice, bob, every_minutes=10)
    plan = plan_of(lanes_sql.CHECKS_FINISHED, {"window": timedelta(days=30)})
    tasks = nodes_reading(plan, "queue_app_lanetask")
    assert tasks, "the statement no longer reads lane tasks: update this test"
    for node in tasks:
        assert node["Node Type"] in ("Index Scan", "Index Only Scan"), node
    assert nodes_reading(plan, "queue_app_checktally"), (
        "whole days no longer come from the check tally"
    )
