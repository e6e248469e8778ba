"""The claim walks the partial indexes, never the whole table or the history."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.db import connection

from queue_app.db.statements import leases as leases_sql

pytestmark = pytest.mark.django_db


def _plan(statement: str, params: dict) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + statement, params)
        return json.dumps(cursor.fetchone()[0])


def _load_history(queue) -> None:
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


def _seq_scanned(node: dict | list) -> set[str]:
    """The relations a JSON plan reads by sequential scan."""
    if isinstance(node, list):
        return set().union(*(_seq_scanned(n) for n in node))
    found = {node["Relation Name"]} if node.get("Node Type") == "Seq Scan" else set()
    for child in node.get("Plans", []) + ([node["Plan"]] if "Plan" in node else []):
        found |= _seq_scanned(child)
    return found


def _assert_walks_partial_indexes(plan: str) -> None:
    assert "item_pending_claim" in plan
    assert "item_leased_expiry" in plan
    assert "item_held_until" in plan  # due holds: their own partial index
    # Items (and their decided history) are never walked. The access check's lookups in the
    # small grant tables may be planned as sequential scans once those tables have statistics
    # saying they hold a handful of rows; that is the planner's right call there.
    assert "queue_app_reviewitem" not in _seq_scanned(json.loads(plan))


def test_claim_uses_the_pending_and_leased_partial_indexes(queue, alice):
    _load_history(queue)
    plan = _plan(
        leases_sql.CLAIM_ITEMS,
        {
            "queue_id": queue.pk,
            "owner_id": alice.pk,
            "limit": 1,
            "ttl": timedelta(minutes=5),
            "max_leases": 3,
            "release_skip": timedelta(minutes=15),
        },
    )
    _assert_walks_partial_indexes(plan)


def test_the_cached_plan_of_next_item_walks_the_same_indexes(queue, alice):
    # claim_next's statement is prepared; after a few runs the server may reuse one generic
    # plan for every reviewer and queue. Force that plan and check it is the careful one.
    _load_history(queue)
    names: list[str] = []

    def placeholder(match: re.Match) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    text = re.sub(r"%\((\w+)\)s", placeholder, leases_sql.CLAIM_NEXT_ITEM).replace("%%", "%")
    values = {
        "queue_id": queue.pk,
        "owner_id": alice.pk,
        "ttl": "5 minutes",
        "max_leases": 3,
        "release_skip": "15 minutes",
    }
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE next_item AS {text}")
        cursor.execute(
            "EXPLAIN (FORMAT JSON) EXECUTE next_item(" + ", ".join("%s" for _ in names) + ")",
            [values[name] for name in names],
        )
        plan = json.dumps(cursor.fetchone()[0])
        cursor.execute("DEALLOCATE next_item")
    _assert_walks_partial_indexes(plan)
