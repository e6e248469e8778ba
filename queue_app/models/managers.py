"""Thin managers: run the named statements of queue_app.db.statements and hand back model
instances.

No policy here (who may claim, what a stale token means): that is the services package. How the
statements are sent and their results read is queue_app.db.runner.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any, TypeVar, cast
from uuid import UUID

from django.db import models

from queue_app.db.runner import (
    Result,
    build_instances,
    fetch_dicts,
    fetch_instances,
    prefixed_columns,
    prepared_result,
    run_together,
    split_result,
)
from queue_app.db.statements import access as access_sql
from queue_app.db.statements import decisions as decisions_sql
from queue_app.db.statements import holds as holds_sql
from queue_app.db.statements import items as items_sql
from queue_app.db.statements import leases as leases_sql
from queue_app.db.statements import outbox as outbox_sql

# The model each manager serves (ReviewItem, Decision), read from self.model: the models
# import their managers, so this module names none of them.
_Item = TypeVar("_Item", bound=models.Model)
_Decision = TypeVar("_Decision", bound=models.Model)

_QUEUE_PREFIX = "queue__"


@cache
def _item_with_queue_statement(queue_model: type[models.Model]) -> str:
    """items_sql.ITEM_WITH_QUEUE_AND_ACCESS with the queue's columns, as the model has them."""
    columns = prefixed_columns(queue_model, alias="q", prefix=_QUEUE_PREFIX)
    return items_sql.ITEM_WITH_QUEUE_AND_ACCESS.format(queue_columns=columns)


class ReviewItemManager(models.Manager[_Item]):
    def renew_or_claim_one(
        self,
        *,
        queue_id: int,
        owner_id: int,
        ttl: timedelta,
        max_leases: int,
        release_skip: timedelta,
        lock_timeout_ms: int,
        statement_timeout_ms: int,
        for_page: bool = False,
    ) -> tuple[bool, _Item | None, _Item | None]:
        """A reviewer's Next item in one round trip, committed; return (may review, renewed,
        claimed).

        Sets the timeouts and takes the reviewer's claim lock in this queue, renews their live
        lease there if they hold one, and otherwise claims the next item. Neither the renew
        nor the claim does anything for a reviewer who may not review the queue. for_page:
        the items come back with their id, trace id and lease count only, the rest deferred
        (leases_sql.CLAIM_NEXT_ITEM_FOR_PAGE), for a caller that opens the item's page next.
        """
        params = {
            "queue_id": queue_id,
            "owner_id": owner_id,
            "lock_timeout": f"{lock_timeout_ms}ms",
            "statement_timeout": f"{statement_timeout_ms}ms",
            "ttl": ttl,
            "max_leases": max_leases,
            "release_skip": release_skip,
        }
        renew, claim = (
            (leases_sql.RENEW_OWN_LIVE_LEASE_FOR_PAGE, leases_sql.CLAIM_NEXT_ITEM_FOR_PAGE)
            if for_page
            else (leases_sql.RENEW_OWN_LIVE_LEASE, leases_sql.CLAIM_NEXT_ITEM)
        )
        guard, renewed, claimed = run_together(
            [
                (access_sql.SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE, params),
                (renew, params),
                (claim, params),
            ],
            commit=True,
        )
        allowed = bool(guard[1][0][-1])
        renewed_items = build_instances(self.model, renewed)
        claimed_items = build_instances(self.model, claimed)
        return (
            allowed,
            renewed_items[0] if renewed_items else None,
            claimed_items[0] if claimed_items else None,
        )

    def with_queue_and_access(self, *, item_id: int, user_id: int) -> _Item | None:
        """The item with its queue attached and may_review set (whether the user may review
        that queue), in one prepared statement; None if there is no such item."""
        statement, params = self.with_queue_and_access_statement(item_id=item_id, user_id=user_id)
        return self.built_with_queue(prepared_result(statement, params))

    def with_queue_and_access_statement(
        self, *, item_id: int, user_id: int
    ) -> tuple[str, dict[str, Any]]:
        """with_queue_and_access's statement, for a caller that sends it with others."""
        queue_model = cast("type[models.Model]", self.model._meta.get_field("queue").related_model)
        return _item_with_queue_statement(queue_model), {"item_id": item_id, "owner_id": user_id}

    def built_with_queue(self, result: Result) -> _Item | None:
        """The item with_queue_and_access's statement returned, its queue attached, or None."""
        queue_model = cast("type[models.Model]", self.model._meta.get_field("queue").related_model)
        item_columns, queue_columns = split_result(result, prefix=_QUEUE_PREFIX)
        items = build_instances(self.model, item_columns)
        if not items:
            return None
        item: Any = items[0]  # the model's queue field, which this module does not name
        item.queue = build_instances(queue_model, queue_columns)[0]
        return item

    def may_review(self, *, queue_id: int, user_id: int) -> bool:
        rows = fetch_dicts(
            access_sql.MAY_REVIEW_QUEUE,
            {"queue_id": queue_id, "owner_id": user_id},
        )
        return bool(rows[0]["allowed"])

    def may_send_evidence(self, *, queue_id: int, user_id: int) -> bool:
        rows = fetch_dicts(
            access_sql.MAY_SEND_EVIDENCE, {"queue_id": queue_id, "owner_id": user_id}
        )
        return bool(rows[0]["allowed"])

    def claim(
        self,
        *,
        queue_id: int,
        owner_id: int,
        limit: int,
        ttl: timedelta,
        max_leases: int,
        release_skip: timedelta,
    ) -> list[_Item]:
        return fetch_instances(
            self.model,
            leases_sql.CLAIM_ITEMS,
            {
                "queue_id": queue_id,
                "owner_id": owner_id,
                "limit": limit,
                "ttl": ttl,
                "max_leases": max_leases,
                "release_skip": release_skip,
            },
        )

    def renew(
        self, *, item_id: int, queue_id: int, lease_token: UUID, owner_id: int, ttl: timedelta
    ) -> datetime | None:
        rows = fetch_dicts(
            leases_sql.RENEW_LEASE,
            {
                "item_id": item_id,
                "queue_id": queue_id,
                "lease_token": lease_token,
                "owner_id": owner_id,
                "ttl": ttl,
            },
        )
        return rows[0]["lease_expires"] if rows else None

    def release(self, *, item_id: int, queue_id: int, lease_token: UUID, owner_id: int) -> bool:
        rows = fetch_dicts(
            leases_sql.RELEASE_LEASE,
            {
                "item_id": item_id,
                "queue_id": queue_id,
                "lease_token": lease_token,
                "owner_id": owner_id,
            },
        )
        return bool(rows)

    def escalate_abandoned(self, *, limit: int) -> list[dict[str, Any]]:
        return fetch_dicts(leases_sql.ESCALATE_ABANDONED, {"limit": limit})

    # -- holds and the subject's history --

    def hold(
        self,
        *,
        item_id: int,
        lease_token: UUID,
        owner_id: int,
        reason_code: str,
        hold_until: datetime,
    ) -> dict[str, Any] | None:
        rows = fetch_dicts(
            holds_sql.HOLD_ITEM,
            {
                "item_id": item_id,
                "lease_token": lease_token,
                "owner_id": owner_id,
                "reason_code": reason_code,
                "hold_until": hold_until,
            },
        )
        return rows[0] if rows else None

    def resume_held(
        self, *, item_id: int, actor_id: int | None, cause: str
    ) -> dict[str, Any] | None:
        rows = fetch_dicts(
            holds_sql.RESUME_HELD_ITEM, {"item_id": item_id, "actor_id": actor_id, "cause": cause}
        )
        return rows[0] if rows else None

    def subject_history(
        self, *, subject_key: str, exclude_id: int, user_id: int, limit: int, using: str = "default"
    ) -> list[dict[str, Any]]:
        return fetch_dicts(
            items_sql.SUBJECT_HISTORY,
            {
                "subject_key": subject_key,
                "exclude_id": exclude_id,
                "owner_id": user_id,
                "limit": limit,
            },
            using=using,
        )


class DecisionManager(models.Manager[_Decision]):
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
        needs_check: bool = False,
        qa_sampled: bool = False,
        suggestion_view: str | None = None,
        suggestion_shown_at: datetime | None = None,
        commit: bool = False,
    ) -> _Decision:
        """Insert a decision (commit: and end the transaction, see run_together).

        A reason that is not an active code of this queue and verdict fails the statement
        (see decisions_sql.INSERT_DECISION and is_missing_reason).
        """
        [inserted] = run_together(
            [
                (
                    decisions_sql.INSERT_DECISION,
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
                        "needs_check": needs_check,
                        "qa_sampled": qa_sampled,
                        "suggestion_view": suggestion_view,
                        "suggestion_shown_at": suggestion_shown_at,
                    },
                )
            ],
            commit=commit,
            # INSERT_DECISION queued an effect job unless the decision waits for its check.
            after_commit=() if needs_check else [(outbox_sql.WAKE_APPLY_WORKERS, {})],
        )
        return self._built(inserted)

    def close_and_record(
        self,
        *,
        item_id: int,
        queue_id: int,
        lease_token: UUID,
        reviewer_id: int,
        verdict: str,
        reason_code: str,
        evidence_hash: str,
        note: str,
        qa_draw: int | None,
        warnings_seen: bool,
        time_zone: str,
        lock_timeout_ms: int,
        statement_timeout_ms: int,
        suggestion_view: str | None = None,
        suggestion_shown_at: datetime | None = None,
    ) -> _Decision | None:
        """The whole decide in one round trip with its COMMIT
        (decisions_sql.CLOSE_AND_RECORD_DECISION); None when one of the statement's conditions
        did not hold, and nothing was written.

        The wake-up of the apply workers follows the COMMIT whether an effect job was queued
        or not: which it was is known only from the result, and a wake-up that finds nothing
        costs a worker one empty claim.
        """
        params = {
            "item_id": item_id,
            "queue_id": queue_id,
            "lease_token": lease_token,
            "owner_id": reviewer_id,
            "reviewer_id": reviewer_id,
            "verdict": verdict,
            "reason_code": reason_code,
            "evidence_hash": evidence_hash,
            "note": note,
            "supersedes_id": None,
            "corrected_verdict": None,
            # As numeric whatever its size (an int over 2**63 would be, one under it bigint):
            # one parameter type, so one prepared statement.
            "qa_draw": None if qa_draw is None else Decimal(qa_draw),
            "warnings_seen": warnings_seen,
            "time_zone": time_zone,
            "suggestion_view": suggestion_view,
            "suggestion_shown_at": suggestion_shown_at,
            "lock_timeout": f"{lock_timeout_ms}ms",
            "statement_timeout": f"{statement_timeout_ms}ms",
        }
        _, recorded = run_together(
            [
                (access_sql.SET_LOCAL_TIMEOUTS, params),
                (decisions_sql.CLOSE_AND_RECORD_DECISION, params),
            ],
            commit=True,
            after_commit=[(outbox_sql.WAKE_APPLY_WORKERS, {})],
        )
        if not recorded[1]:
            return None
        return self._built(recorded)

    def refusal_facts(
        self,
        *,
        item_id: int,
        queue_id: int,
        lease_token: UUID,
        reviewer_id: int,
        verdict: str,
        evidence_hash: str,
        time_zone: str,
    ) -> dict[str, bool] | None:
        """Which of close_and_record's conditions hold now (decisions_sql.EXPLAIN_REFUSED_DECISION);
        None when there is no such item. Reads only."""
        rows = fetch_dicts(
            decisions_sql.EXPLAIN_REFUSED_DECISION,
            {
                "item_id": item_id,
                "queue_id": queue_id,
                "lease_token": lease_token,
                "owner_id": reviewer_id,
                "verdict": verdict,
                "evidence_hash": evidence_hash,
                "time_zone": time_zone,
            },
        )
        return rows[0] if rows else None

    def _built(self, result: Result) -> _Decision:
        queue_model = cast("type[models.Model]", self.model._meta.get_field("queue").related_model)
        reason_model = cast(
            "type[models.Model]", self.model._meta.get_field("reason_code").related_model
        )
        decision_columns, reason_columns = split_result(result, prefix="reason__")
        decision_columns, queue_columns = split_result(decision_columns, prefix=_QUEUE_PREFIX)
        decision: Any = build_instances(self.model, decision_columns)[0]  # as item above
        decision.reason_code = build_instances(reason_model, reason_columns)[0]
        if queue_columns[0]:
            # The one-statement decide returns what a Next claim needs of the queue (the rest
            # of its fields deferred): the decision's queue, in its cache.
            decision.queue = build_instances(queue_model, queue_columns)[0]
        return decision
