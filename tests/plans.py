"""Reading query plans in tests: what keeps a statement flat is the plan the planner picks."""

from __future__ import annotations

from django.db import connection


def plan_of(statement: str, params: dict) -> dict:
    """The plan (EXPLAIN, FORMAT JSON) of the statement with these parameters: its top node."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + statement, params)
        return cursor.fetchone()[0][0]["Plan"]


def nodes_reading(node: dict, relation: str) -> list[dict]:
    """Every node of the plan that reads the relation."""
    found = [node] if node.get("Relation Name") == relation else []
    for child in node.get("Plans", []):
        found += nodes_reading(child, relation)
    return found
