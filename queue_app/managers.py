"""Thin managers: run the named statements in queue_app.sql and hand back model instances.

No policy here (who may claim, what a stale token means): that is services.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from django.db import connection, models

from queue_app import sql

if TYPE_CHECKING:
    from queue_app.models import Decision, ReviewItem


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


class ReviewItemManager(models.Manager["ReviewItem"]):
    def _raw(self, statement: str, params: dict[str, Any]) -> list[ReviewItem]:
        # raw() maps RETURNING columns onto the model and applies field converters (exact JSON).
        return list(self.raw(statement, params))

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
        reason_code_id: int,
        evidence_hash: str,
        note: str,
        lease_token: UUID | None = None,
        supersedes_id: int | None = None,
        corrected_verdict: str | None = None,
    ) -> Decision:
        rows = list(
            self.raw(
                sql.INSERT_DECISION,
                {
                    "item_id": item_id,
                    "queue_id": queue_id,
                    "reviewer_id": reviewer_id,
                    "verdict": verdict,
                    "reason_code_id": reason_code_id,
                    "evidence_hash": evidence_hash,
                    "note": note,
                    "lease_token": lease_token,
                    "supersedes_id": supersedes_id,
                    "corrected_verdict": corrected_verdict,
                },
            )
        )
        return rows[0]
