"""Read what doctor and /metrics judge the system's health by (statements in db/statements/ops.py).

From the primary: the lists are short, and a lagging replica would report as a fault what is
only its lag.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import ops as ops_sql


def double_leases() -> list[dict[str, Any]]:
    """Return every reviewer holding two live leases in one queue."""
    return fetch_dicts(ops_sql.DOUBLE_LEASES, {})


def reviewers_active(*, active_within: timedelta) -> int:
    """Return how many reviewers worked within the span."""
    return fetch_dicts(ops_sql.REVIEWERS_ACTIVE, {"active_within": active_within})[0]["active"]


def queue_table_locks() -> list[dict[str, Any]]:
    """Return the transactions and lock waits touching the queue tables."""
    return fetch_dicts(ops_sql.QUEUE_TABLE_LOCKS, {})


def apply_state(*, overdue_after: timedelta) -> list[dict[str, Any]]:
    """Return each queue's unapplied decisions, flagged overdue past the span."""
    return fetch_dicts(ops_sql.APPLY_STATE, {"overdue_after": overdue_after})


def blocked_effects(*, limit: int) -> list[dict[str, Any]]:
    """Return the items whose effects wait behind a dead effect job."""
    return fetch_dicts(ops_sql.BLOCKED_EFFECTS, {"limit": limit})


def table_bloat() -> list[dict[str, Any]]:
    """Return the queue tables' live and dead tuple counts."""
    return fetch_dicts(ops_sql.TABLE_BLOAT, {})


def sealing_backlog() -> dict[str, Any]:
    """Return what waits for the sealer: decisions and outcomes, and the oldest of each."""
    [backlog] = fetch_dicts(ops_sql.SEALING_BACKLOG, {})
    return backlog
