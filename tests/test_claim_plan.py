"""The claim walks the partial indexes, never the whole table or the history."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection

from queue_app import sql

pytestmark = pytest.mark.django_db


def _plan(statement: str, params: dict) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + statement, params)
        return json.dumps(cursor.fetchone()[0])


def test_claim_uses_the_pending_and_leased_partial_indexes(queue, alice):
    # Enough rows, most of them decided history, for the planner to prefer the indexes.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_reviewitem
                (queue_id, state, priority, created_at, subject, payload, idempotency_key,
                 source_hash, trace_id, lease_count, decided_at)
            SELECT %s, CASE WHEN g %% 10 = 0 THEN 'pending' ELSE 'decided' END, 0, now(),
                   'bulk ' || g, '{}'::jsonb, 'bulk-' || g, '', gen_random_uuid(), 0,
                   CASE WHEN g %% 10 = 0 THEN NULL ELSE now() END
              FROM generate_series(1, 20000) AS g
            """,
            [queue.pk],
        )
        cursor.execute("ANALYZE queue_app_reviewitem")
    plan = _plan(
        sql.CLAIM_ITEMS,
        {
            "queue_id": queue.pk,
            "owner_id": alice.pk,
            "limit": 1,
            "ttl": timedelta(minutes=5),
            "max_leases": 3,
        },
    )
    assert "item_pending_claim" in plan
    assert "item_leased_expiry" in plan
    assert '"Seq Scan"' not in plan
