"""The operations a person would name: claim, renew, release, decide, overturn, escalate.

Views, the API and management commands call these and nothing lower. Each takes keyword-only
arguments, runs in an explicit transaction, and fails with a queue_app.errors type.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, connection, transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from queue_app.errors import (
    AlreadyDecided,
    AlreadySuperseded,
    EvidenceChanged,
    IdempotencyConflict,
    InvalidBounds,
    InvalidReason,
    InvalidVerdict,
    ItemNotFound,
    NotPermitted,
    StaleLease,
)
from queue_app.evidence import evidence_hash
from queue_app.jsonutil import exact_loads
from queue_app.managers import is_missing_reason, set_local_timeouts
from queue_app.models import (
    CORRECTED_VERDICTS,
    REVIEW_VERDICTS,
    Decision,
    EffectJob,
    ItemEvent,
    ItemEventKind,
    ItemState,
    Queue,
    ReasonCode,
    ReviewItem,
    Verdict,
)

logger = logging.getLogger("queue_app")

BATCH_SIZE_RANGE = (1, 200)
BATCH_TTL_RANGE = (timedelta(seconds=1), timedelta(hours=1))
NOTE_MAX_LENGTH = 10_000
# Claims skip nothing on lease count unless the queue has somewhere to escalate to.
_NO_LEASE_LIMIT = 2**31 - 1

User = AbstractBaseUser | AnonymousUser


def _guard_timeouts() -> None:
    set_local_timeouts(
        lock_timeout_ms=settings.REVIEW_LOCK_TIMEOUT_MS,
        statement_timeout_ms=settings.REVIEW_STATEMENT_TIMEOUT_MS,
    )


def _max_leases(queue: Queue) -> int:
    return queue.escalation_threshold if queue.escalation_queue_id else _NO_LEASE_LIMIT


def _log_extra(**fields: Any) -> dict[str, Any]:
    return {
        key: (str(value) if isinstance(value, uuid.UUID) else value)
        for key, value in fields.items()
    }


# -- access -------------------------------------------------------------------------------------


def queues_for_user(*, user: User) -> QuerySet[Queue]:
    """Return the queues this user may review: by group, API client grant, or all (superusers)."""
    if not user.is_authenticated or not user.is_active:
        return Queue.objects.none()
    if user.is_superuser:
        return Queue.objects.all()
    # An API client's service user reviews the queues named on its client while it is not
    # revoked (the API's access list), on top of any group grant.
    return Queue.objects.filter(
        Q(reviewer_groups__user=user)
        | Q(api_clients__user=user, api_clients__revoked_at__isnull=True)
    ).distinct()


def user_can_review(*, user: User, queue: Queue | int) -> bool:
    """Return whether the user may claim and decide items of this queue."""
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    queue_id = queue if isinstance(queue, int) else queue.pk
    # The same rule as queues_for_user, as two index lookups rather than a DISTINCT join.
    return ReviewItem.objects.may_review(queue_id=queue_id, user_id=user.pk, is_superuser=False)


# -- intake -------------------------------------------------------------------------------------


def create_item(
    *,
    queue: Queue,
    subject: str,
    payload: Any,
    idempotency_key: str,
    source_hash: str = "",
    priority: int = 0,
    trace_id: uuid.UUID | None = None,
    escalated_from: ReviewItem | None = None,
) -> tuple[ReviewItem, bool]:
    """Create an item once per idempotency key; return (item, created).

    Replaying a key with the same source hash returns the existing item; a different source
    hash for the same key is an IdempotencyConflict (two different things under one name).
    escalated_from links an escalation to its origin in the same INSERT, so no escalated item
    is ever visible without it.
    """
    with transaction.atomic():
        try:
            # A savepoint: a concurrent insert of the same key loses the unique race here and
            # falls through to read the winner's row, inside the caller's transaction.
            with transaction.atomic():
                item = ReviewItem.objects.create(
                    queue=queue,
                    subject=subject,
                    payload=payload,
                    idempotency_key=idempotency_key,
                    source_hash=source_hash,
                    priority=priority,
                    trace_id=trace_id or uuid.uuid4(),
                    escalated_from=escalated_from,
                )
        except IntegrityError:
            existing = ReviewItem.objects.filter(idempotency_key=idempotency_key).first()
            if existing is None:
                raise
            if existing.source_hash != source_hash or existing.queue_id != queue.pk:
                raise IdempotencyConflict(
                    f"Idempotency key {idempotency_key!r} already names item {existing.pk} "
                    "with different content (source_hash or queue differ)."
                ) from None
            return existing, False
        ItemEvent.objects.create(
            item=item, kind=ItemEventKind.CREATED, detail={"priority": priority}
        )
    return item, True


# -- leases -------------------------------------------------------------------------------------


def claim_next(*, queue: Queue, reviewer: User) -> ReviewItem | None:
    """Lease the next item of the queue to a reviewer, or return their live lease, renewed."""
    if not reviewer.is_authenticated or not reviewer.is_active:
        raise NotPermitted("You do not have access to this queue.")
    with transaction.atomic():
        # Committed by the time it returns, if this is the outermost transaction.
        allowed, renewed, claimed = ReviewItem.objects.renew_or_claim_one(
            queue_id=queue.pk,
            owner_id=reviewer.pk,
            is_superuser=reviewer.is_superuser,
            ttl=queue.lease_ttl,
            max_leases=_max_leases(queue),
            lock_timeout_ms=settings.REVIEW_LOCK_TIMEOUT_MS,
            statement_timeout_ms=settings.REVIEW_STATEMENT_TIMEOUT_MS,
        )
    if not allowed:
        # The renew and the claim are gated on the same check: nothing was written.
        raise NotPermitted("You do not have access to this queue.")
    if renewed is not None:
        return renewed
    if claimed is not None:
        logger.info(
            "item claimed",
            extra=_log_extra(
                item_id=claimed.pk,
                queue=queue.slug,
                reviewer=reviewer.pk,
                trace_id=claimed.trace_id,
                lease_count=claimed.lease_count,
            ),
        )
    return claimed


def claim_batch(*, queue: Queue, worker: User, n: int, ttl: timedelta) -> list[ReviewItem]:
    """Lease up to n items (1..200) to an automated worker for ttl (1 s .. 1 h)."""
    if not BATCH_SIZE_RANGE[0] <= n <= BATCH_SIZE_RANGE[1]:
        raise InvalidBounds(
            f"batch size must be between {BATCH_SIZE_RANGE[0]} and {BATCH_SIZE_RANGE[1]}"
        )
    if not BATCH_TTL_RANGE[0] <= ttl <= BATCH_TTL_RANGE[1]:
        raise InvalidBounds("lease duration must be between 1 second and 1 hour")
    if not user_can_review(user=worker, queue=queue):
        raise NotPermitted("You do not have access to this queue.")
    with transaction.atomic():
        _guard_timeouts()
        items = ReviewItem.objects.claim(
            queue_id=queue.pk, owner_id=worker.pk, limit=n, ttl=ttl, max_leases=_max_leases(queue)
        )
    logger.info(
        "batch claimed", extra=_log_extra(queue=queue.slug, reviewer=worker.pk, count=len(items))
    )
    return items


def renew_lease(*, item_id: int, reviewer: User, lease_token: uuid.UUID | str) -> datetime:
    """Extend the reviewer's lease by the queue's TTL; StaleLease if it is no longer theirs."""
    token = _parse_token(lease_token)
    queue = Queue.objects.filter(items__pk=item_id).only("lease_ttl").first()
    if queue is None:
        raise StaleLease()
    with transaction.atomic():
        _guard_timeouts()
        expires = ReviewItem.objects.renew(
            item_id=item_id, lease_token=token, owner_id=reviewer.pk, ttl=queue.lease_ttl
        )
    if expires is None:
        raise StaleLease()
    return expires


def release_lease(*, item_id: int, reviewer: User, lease_token: uuid.UUID | str) -> None:
    """Give the item back to its queue; StaleLease if the lease is no longer the reviewer's."""
    token = _parse_token(lease_token)
    with transaction.atomic():
        _guard_timeouts()
        released = ReviewItem.objects.release(
            item_id=item_id, lease_token=token, owner_id=reviewer.pk
        )
    if not released:
        raise StaleLease()
    logger.info("item released", extra=_log_extra(item_id=item_id, reviewer=reviewer.pk))


def _parse_token(lease_token: uuid.UUID | str) -> uuid.UUID:
    if isinstance(lease_token, uuid.UUID):
        return lease_token
    try:
        return uuid.UUID(str(lease_token))
    except ValueError:
        # A forged or mangled token can never match a lease: same answer as a stale one.
        raise StaleLease() from None


# -- decisions ----------------------------------------------------------------------------------


def reason_codes_for(*, queue: Queue | int, verdict: str) -> QuerySet[ReasonCode]:
    """Return the active reason codes a new decision of this verdict may use in this queue."""
    queue_id = queue if isinstance(queue, int) else queue.pk
    return ReasonCode.objects.filter(queue_id=queue_id, verdict=verdict, retired_at__isnull=True)


def _code(reason_code: str | ReasonCode) -> str:
    return reason_code.code if isinstance(reason_code, ReasonCode) else reason_code


def submit_decision(
    *,
    item_id: int,
    reviewer: User,
    lease_token: uuid.UUID | str,
    verdict: str,
    reason_code: str | ReasonCode,
    evidence_hash: str,
    note: str = "",
) -> Decision:
    """Close a leased item with a verdict, fenced by the lease token and the evidence hash."""
    token = _parse_token(lease_token)
    if verdict not in REVIEW_VERDICTS:
        raise InvalidVerdict()
    if len(note) > NOTE_MAX_LENGTH:
        raise InvalidBounds(f"The note is longer than {NOTE_MAX_LENGTH} characters.")
    if not reviewer.is_authenticated or not reviewer.is_active:
        raise NotPermitted("You no longer have access to this queue.")
    try:
        with transaction.atomic():
            allowed, closed = ReviewItem.objects.guard_and_close(
                item_id=item_id,
                lease_token=token,
                owner_id=reviewer.pk,
                is_superuser=reviewer.is_superuser,
                lock_timeout_ms=settings.REVIEW_LOCK_TIMEOUT_MS,
                statement_timeout_ms=settings.REVIEW_STATEMENT_TIMEOUT_MS,
            )
            if closed is None:
                raise StaleLease()
            # Everything below raises inside the transaction: the close rolls back with it.
            if not allowed:
                raise NotPermitted("You no longer have access to this queue.")
            actual = _evidence_hash_of_row(closed)
            if evidence_hash != actual:
                raise EvidenceChanged()
            if verdict == Verdict.ESCALATE and closed["escalation_queue_id"] is None:
                raise InvalidVerdict("This queue has no escalation queue to escalate to.")
            # The insert and the COMMIT travel together (the decision chain's lock is held
            # from the insert to the commit, and no longer than that).
            decision = Decision.objects.insert(
                item_id=item_id,
                queue_id=closed["queue_id"],
                reviewer_id=reviewer.pk,
                verdict=verdict,
                reason_code=_code(reason_code),
                evidence_hash=actual,
                note=note,
                lease_token=token,
                commit=True,
            )
    except IntegrityError as exc:
        if is_missing_reason(exc):
            raise InvalidReason() from None
        raise
    logger.info(
        "decision recorded",
        extra=_log_extra(
            decision_id=decision.pk,
            item_id=item_id,
            queue=closed["queue_slug"],
            reviewer=reviewer.pk,
            verdict=verdict,
        ),
    )
    return decision


def _evidence_hash_of_row(row: dict[str, Any]) -> str:
    payload = row["payload"]
    if isinstance(payload, str):
        payload = exact_loads(payload)
    return evidence_hash(subject=row["subject"], payload=payload)


def standing_decision(*, item: ReviewItem | int) -> Decision | None:
    """Return the last decision in the item's supersede chain (the one no overturn replaced)."""
    item_id = item if isinstance(item, int) else item.pk
    return (
        Decision.objects.filter(item_id=item_id, superseded_by__isnull=True)
        .select_related("reason_code", "reviewer")
        .first()
    )


def standing_outcome(*, item: ReviewItem | int) -> str | None:
    """Return the verdict that stands for the item now, or None if undecided."""
    decision = standing_decision(item=item)
    return decision.standing_verdict if decision else None


def overturn_decision(
    *,
    decision_id: int,
    admin: User,
    corrected_verdict: str,
    reason_code: str | ReasonCode,
    note: str = "",
) -> Decision:
    """Supersede a standing decision with an overturn row (never an edit)."""
    if not admin.is_authenticated or not admin.has_perm("queue_app.can_overturn"):
        raise NotPermitted("You do not have permission to overturn decisions.")
    if corrected_verdict not in CORRECTED_VERDICTS:
        raise InvalidVerdict("An overturn leaves either approve or reject standing.")
    if len(note) > NOTE_MAX_LENGTH:
        raise InvalidBounds(f"The note is longer than {NOTE_MAX_LENGTH} characters.")
    with transaction.atomic():
        _guard_timeouts()
        # The row lock serialises two admins overturning the same decision at once; the second
        # then sees the first's overturn and gets AlreadySuperseded, not a constraint error.
        target = (
            Decision.objects.select_for_update(of=("self",))
            .select_related("item")
            .get(pk=decision_id)
        )
        if Decision.objects.filter(supersedes_id=target.pk).exists():
            raise AlreadySuperseded()
        if target.verdict == Verdict.ESCALATE:
            raise InvalidVerdict(
                "An escalation is not overturned; decide the escalated item in its own queue."
            )
        if target.reviewer_id == admin.pk:
            raise NotPermitted("Four eyes: you cannot overturn a decision you made yourself.")
        if target.standing_verdict == corrected_verdict:
            raise InvalidVerdict(f"The decision already stands as {corrected_verdict}.")
        item = target.item
        try:
            with transaction.atomic():
                overturn = Decision.objects.insert(
                    item_id=item.pk,
                    queue_id=target.queue_id,
                    reviewer_id=admin.pk,
                    verdict=Verdict.OVERTURN,
                    reason_code=_code(reason_code),
                    evidence_hash=evidence_hash(subject=item.subject, payload=item.payload),
                    note=note,
                    supersedes_id=target.pk,
                    corrected_verdict=corrected_verdict,
                )
        except IntegrityError as exc:
            if is_missing_reason(exc):
                raise InvalidReason() from None
            if "supersedes" in str(exc):
                raise AlreadySuperseded() from None
            raise
    logger.info(
        "decision overturned",
        extra=_log_extra(
            decision_id=overturn.pk,
            supersedes=target.pk,
            item_id=item.pk,
            reviewer=admin.pk,
            verdict=corrected_verdict,
        ),
    )
    return overturn


# -- abandonment --------------------------------------------------------------------------------


def escalate_abandoned(*, limit: int = 500) -> int:
    """Move items abandoned escalation_threshold times to their escalation queue; return count."""
    with transaction.atomic():
        _guard_timeouts()
        moved = ReviewItem.objects.escalate_abandoned(limit=limit)
    for row in moved:
        logger.warning(
            "item auto-escalated",
            extra=_log_extra(
                item_id=row["id"],
                trace_id=row["trace_id"],
                queue=row["from_queue_id"],
                to_queue=row["to_queue_id"],
                lease_count=row["lease_count"],
            ),
        )
    return len(moved)


# -- outbox -------------------------------------------------------------------------------------


def retry_effect_job(*, decision_id: int, operator: User) -> bool:
    """Put a dead effect job back in line for the apply worker; return whether one was dead."""
    revived = EffectJob.objects.filter(
        decision_id=decision_id, dead=True, done_at__isnull=True
    ).update(dead=False, attempts=0, next_attempt_at=Now())
    if revived:
        with connection.cursor() as cursor:
            # Wake idle workers now rather than at their next poll.
            cursor.execute("SELECT pg_notify('queue_app_effect_jobs', '')")
        logger.info(
            "effect job retried by operator",
            extra=_log_extra(decision_id=decision_id, reviewer=operator.pk),
        )
    return bool(revived)


def database_now() -> datetime:
    """Return the database clock (leases are judged by it, not by this process's clock)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


# -- API services -------------------------------------------------------------------------------
# Operations the JSON API (queue_app/api/) names that the console does not: replacing an item's
# evidence, recognising a retried completion, and reading an item's decision history.


def replace_evidence(
    *, item_id: int, actor: User, payload: Any, subject: str | None = None
) -> ReviewItem:
    """Replace a pending or leased item's payload (and subject); AlreadyDecided once decided."""
    with transaction.atomic():
        _guard_timeouts()
        # The row lock orders this against a concurrent fenced close: if the close commits
        # first we see 'decided' and refuse; if we commit first the close re-reads our payload
        # and the holder's evidence hash no longer matches (EvidenceChanged).
        item = ReviewItem.objects.select_for_update().filter(pk=item_id).first()
        if item is None:
            raise ItemNotFound()
        if item.state == ItemState.DECIDED:
            raise AlreadyDecided()
        before = evidence_hash(subject=item.subject, payload=item.payload)
        item.payload = payload
        if subject is not None:
            item.subject = subject
        item.evidence_updated_at = database_now()
        item.save(update_fields=["payload", "subject", "evidence_updated_at"])
        after = evidence_hash(subject=item.subject, payload=item.payload)
        ItemEvent.objects.create(
            item=item,
            kind=ItemEventKind.EVIDENCE_REPLACED,
            actor=actor if actor.is_authenticated else None,
            detail={"previous_evidence_hash": before, "evidence_hash": after},
        )
    logger.info(
        "evidence replaced",
        extra=_log_extra(item_id=item.pk, trace_id=item.trace_id, reviewer=actor.pk),
    )
    return item


def find_completed_decision(
    *,
    item_id: int,
    reviewer: User,
    lease_token: uuid.UUID | str,
    verdict: str,
    reason_code: str,
    evidence_hash: str,
) -> Decision | None:
    """Return the decision this exact completion already recorded (a client's retry), if any."""
    try:
        token = _parse_token(lease_token)
    except StaleLease:
        return None
    # Decisions store the lease token that fenced them, so a retry is recognised by what it
    # names, not guessed from timing; a different verdict, reason or hash is not a retry.
    return (
        Decision.objects.filter(
            item_id=item_id,
            reviewer_id=reviewer.pk,
            lease_token=token,
            verdict=verdict,
            reason_code__code=reason_code,
            evidence_hash=evidence_hash,
        )
        .exclude(verdict=Verdict.OVERTURN)
        .select_related("reason_code", "reviewer")
        .first()
    )


def item_decisions(*, item_id: int) -> list[Decision]:
    """Return the item's decisions in order, with reason, author and effect status loaded."""
    return list(
        Decision.objects.filter(item_id=item_id)
        .select_related("reason_code", "reviewer", "applied", "effect_job")
        .order_by("id")
    )
