"""The oversight statements read a recent window of the log through an index on created_at
(the BRIN decision_created_brin, or decision_reviewer_recent where the planner prefers it),
never the whole log."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection

from queue_app.db.statements import oversight as oversight_sql
from queue_app.selectors.oversight import BAND_FLOORS, WINDOW
from tests.oversight.conftest import many

pytestmark = pytest.mark.django_db

OLD = 20_000


def _old_history(queue, reviewer) -> None:
    """OLD decided items with suggestions, decided a year ago, in one statement (physical order
    follows created_at, as in a real log)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH items AS (
                INSERT INTO queue_app_reviewitem
                       (queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                        idempotency_key, source_hash, trace_id, lease_count, decided_at,
                        review_round, suggestion)
                SELECT %(queue)s, %(queue)s, 'decided', 0, now() - interval '400 days', 'old',
                       '{}', 'old-' || g, '', gen_random_uuid(), 1,
                       now() - interval '400 days' + g * interval '1 second', 0,
                       '{"verdict": "approve", "reason_code": "verified", "confidence": "0.8",
                         "model": {"name": "m", "version": "1"}}'
                  FROM generate_series(1, %(n)s) AS g
             RETURNING id, decided_at
            )
            INSERT INTO queue_app_decision
                   (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
                    created_at, chain_hash, lease_token)
            SELECT items.id, %(queue)s, %(reviewer)s, 'approve',
                   (SELECT r.id FROM queue_app_reasoncode AS r
                     WHERE r.queue_id = %(queue)s AND r.code = 'verified'),
                   repeat('0', 64), '', decided_at, '', gen_random_uuid()
              FROM items ORDER BY items.id
            """,
            {"queue": queue.pk, "reviewer": reviewer.pk, "n": OLD},
        )
        cursor.execute("ANALYZE queue_app_decision")
        cursor.execute("ANALYZE queue_app_reviewitem")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SUGGESTION_FOLLOWING", "AUTOMATIC_DECISIONS_QA"])
def test_it_reads_the_window_through_an_index_on_created_at(screen, alice, name):
    _old_history(screen, alice)
    many(screen, alice, 3, followed=2, view="shown")
    params = {"window": WINDOW, "band_floors": list(BAND_FLOORS[1:])}

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + getattr(oversight_sql, name), params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "Seq Scan on queue_app_decision" not in plan, plan
    # An index scan names the index with "using"; a bitmap scan (PostgreSQL 15 chooses one
    # for the BRIN index) names it after "Bitmap Index Scan on".
    assert re.search(
        r"(using (decision_created_brin|decision_reviewer_recent|decision_suggested_at)"
        r" on queue_app_decision"
        r"|Bitmap Index Scan on (decision_created_brin|decision_reviewer_recent"
        r"|decision_suggested_at))",
        plan,
    ), plan
    assert timedelta(days=90) == WINDOW
