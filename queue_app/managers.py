"""Thin managers: run the named statements in queue_app.sql and hand back model instances.

No policy here (who may claim, what a stale token means): that is services.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, TypeVar
from uuid import UUID

from django.db import connection, models
from django.db.models.base import DEFERRED

from queue_app import sql

if TYPE_CHECKING:
    from queue_app.models import Decision, ReviewItem

M = TypeVar("M", bound=models.Model)


def set_local_timeouts(*, lock_timeout_ms: int, statement_timeout_ms: int) -> None:
    """Bound lock waits and statement time for the rest of the current transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SET_LOCAL_TIMEOUTS,
            {
                "lock_timeout": f"{lock_timeout_ms}ms",
                "statement_timeout": f"{statement_timeout_ms}ms",
            },
        )


def fetch_dicts(statement: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run a statement and return its rows as dicts keyed by column name."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        if cursor.description is None:
            return []
        names = [col.name for col in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@lru_cache(maxsize=32)
def _row_plan(
    model: type[models.Model], columns: tuple[str, ...]
) -> tuple[list[int | None], list[tuple[int, list[Callable[..., Any]], Any]], list[int]]:
    """How to turn rows with these columns into model instances (worked out once per shape).

    Returns, per concrete field in model order, the column holding it (None: deferred); the
    field converters to apply (the exact-JSON decoder of the payload, for one); and the
    columns that are not fields (set as plain attributes, as raw() does with annotations).
    """
    by_column = {name: i for i, name in enumerate(columns)}
    fields = model._meta.concrete_fields
    order = [by_column.get(f.column) for f in fields]
    converters = []
    for f in fields:
        i = by_column.get(f.column)
        if i is None:
            continue
        col = f.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if found:
            converters.append((i, found, col))
    known = {f.column for f in fields}
    extra = [i for i, name in enumerate(columns) if name not in known]
    return order, converters, extra


def fetch_instances(model: type[M], statement: str, params: dict[str, Any]) -> list[M]:
    """Run a statement RETURNING a model's columns and build instances from the rows.

    What raw() does, without its per-call work of mapping columns to fields again: on the
    claim and decide paths that mapping cost more client CPU than the statements themselves.
    """
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        columns = tuple(col.name for col in cursor.description)
        rows = cursor.fetchall()
    if not rows:
        return []
    order, converters, extra = _row_plan(model, columns)
    instances = []
    for row in rows:
        values = list(row)
        for i, funcs, col in converters:
            for func in funcs:
                values[i] = func(values[i], col, connection)
        instance = model.from_db(
            connection.alias,
            None,
            [DEFERRED if i is None else values[i] for i in order],
        )
        for i in extra:
            setattr(instance, columns[i], values[i])
        instances.append(instance)
    return instances


class ReviewItemManager(models.Manager["ReviewItem"]):
    def _raw(self, statement: str, params: dict[str, Any]) -> list[ReviewItem]:
        return fetch_instances(self.model, statement, params)

    def guard_and_lock_reviewer_queue(
        self,
        *,
        queue_id: int,
        owner_id: int,
        is_superuser: bool,
        lock_timeout_ms: int,
        statement_timeout_ms: int,
    ) -> bool:
        """Set the timeouts, take the per-reviewer claim lock; return whether they may claim."""
        rows = fetch_dicts(
            sql.SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE,
            {
                "queue_id": queue_id,
                "owner_id": owner_id,
                "is_superuser": is_superuser,
                "lock_timeout": f"{lock_timeout_ms}ms",
                "statement_timeout": f"{statement_timeout_ms}ms",
            },
        )
        return bool(rows[0]["allowed"])

    def guard_and_check_item_access(
        self,
        *,
        item_id: int,
        owner_id: int,
        is_superuser: bool,
        lock_timeout_ms: int,
        statement_timeout_ms: int,
    ) -> bool:
        """Set the timeouts; return whether the user may review the item's queue."""
        rows = fetch_dicts(
            sql.SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS,
            {
                "item_id": item_id,
                "owner_id": owner_id,
                "is_superuser": is_superuser,
                "lock_timeout": f"{lock_timeout_ms}ms",
                "statement_timeout": f"{statement_timeout_ms}ms",
            },
        )
        return bool(rows[0]["allowed"])

    def may_review(self, *, queue_id: int, user_id: int, is_superuser: bool) -> bool:
        rows = fetch_dicts(
            sql.MAY_REVIEW_QUEUE,
            {"queue_id": queue_id, "owner_id": user_id, "is_superuser": is_superuser},
        )
        return bool(rows[0]["allowed"])

    def renew_own_live_lease(
        self, *, queue_id: int, owner_id: int, ttl: timedelta
    ) -> ReviewItem | None:
        rows = self._raw(
            sql.RENEW_OWN_LIVE_LEASE, {"queue_id": queue_id, "owner_id": owner_id, "ttl": ttl}
        )
        return rows[0] if rows else None

    def claim(
        self, *, queue_id: int, owner_id: int, limit: int, ttl: timedelta, max_leases: int
    ) -> list[ReviewItem]:
        return self._raw(
            sql.CLAIM_ITEMS,
            {
                "queue_id": queue_id,
                "owner_id": owner_id,
                "limit": limit,
                "ttl": ttl,
                "max_leases": max_leases,
            },
        )

    def renew(
        self, *, item_id: int, lease_token: UUID, owner_id: int, ttl: timedelta
    ) -> datetime | None:
        rows = fetch_dicts(
            sql.RENEW_LEASE,
            {"item_id": item_id, "lease_token": lease_token, "owner_id": owner_id, "ttl": ttl},
        )
        return rows[0]["lease_expires"] if rows else None

    def release(self, *, item_id: int, lease_token: UUID, owner_id: int) -> bool:
        rows = fetch_dicts(
            sql.RELEASE_LEASE,
            {"item_id": item_id, "lease_token": lease_token, "owner_id": owner_id},
        )
        return bool(rows)

    def close(self, *, item_id: int, lease_token: UUID, owner_id: int) -> dict[str, Any] | None:
        rows = fetch_dicts(
            sql.CLOSE_ITEM, {"item_id": item_id, "lease_token": lease_token, "owner_id": owner_id}
        )
        return rows[0] if rows else None

    def escalate_abandoned(self, *, limit: int) -> list[dict[str, Any]]:
        return fetch_dicts(sql.ESCALATE_ABANDONED, {"limit": limit})


class DecisionManager(models.Manager["Decision"]):
    def insert(
        self,
        *,
        item_id: int,
        queue_id: int,
        reviewer_id: int,
        verdict: str,
        reason_code: str,
        evidence_hash: str,
        note: str,
        lease_token: UUID | None = None,
        supersedes_id: int | None = None,
        corrected_verdict: str | None = None,
    ) -> Decision | None:
        """Insert a decision; None (nothing written) if the reason is not an active code of
        this queue and verdict."""
        rows = fetch_instances(
            self.model,
            sql.INSERT_DECISION,
            {
                "item_id": item_id,
                "queue_id": queue_id,
                "reviewer_id": reviewer_id,
                "verdict": verdict,
                "reason_code": reason_code,
                "evidence_hash": evidence_hash,
                "note": note,
                "lease_token": lease_token,
                "supersedes_id": supersedes_id,
                "corrected_verdict": corrected_verdict,
            },
        )
        return rows[0] if rows else None
