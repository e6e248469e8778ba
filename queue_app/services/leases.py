"""Claims and leases: the next item for a reviewer, batches for adjudicators, renew, release."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from queue_app.datetimes import local_text
from queue_app.errors import InvalidBounds, NotPermitted, StaleLease
from queue_app.models import (
    Decision,
    ItemEvent,
    ItemEventKind,
    ItemState,
    Queue,
    ReviewItem,
    Verdict,
)
from queue_app.services._common import (
    User,
    guard_timeouts,
    log_extra,
    logger,
    parse_token,
    signed_in_id,
)
from queue_app.services.access import user_can_review

BATCH_SIZE_RANGE = (1, 200)
BATCH_TTL_RANGE = (timedelta(seconds=1), timedelta(hours=1))
# Claims skip nothing on lease count unless the queue has somewhere to escalate to.
_NO_LEASE_LIMIT = 2**31 - 1


def _max_leases(queue: Queue) -> int:
    return queue.escalation_threshold if queue.escalation_queue_id else _NO_LEASE_LIMIT


def claim_next(*, queue: Queue, reviewer: User) -> ReviewItem | None:
    """Lease the next item of the queue to a reviewer, or return their live lease, renewed."""
    return _claim_next(queue=queue, reviewer=reviewer, for_page=False)


def claim_next_id(*, queue: Queue, reviewer: User) -> int | None:
    """claim_next for a caller that opens the item's page next (the console): the item's id.

    The same claim and renew, returning three columns instead of the whole row: the page reads
    the item itself, and loading the row here cost the console's decide about 0.2 ms of CPU.
    """
    item = _claim_next(queue=queue, reviewer=reviewer, for_page=True)
    return item.pk if item is not None else None


def _claim_next(*, queue: Queue, reviewer: User, for_page: bool) -> ReviewItem | None:
    if not reviewer.is_authenticated or not reviewer.is_active:
        raise NotPermitted("You do not have access to this queue.")
    with transaction.atomic():
        # Committed by the time it returns, if this is the outermost transaction.
        allowed, renewed, claimed = ReviewItem.objects.renew_or_claim_one(
            queue_id=queue.pk,
            owner_id=reviewer.pk,
            ttl=queue.lease_ttl,
            max_leases=_max_leases(queue),
            release_skip=queue.release_skip,
            lock_timeout_ms=settings.REVIEW_LOCK_TIMEOUT_MS,
            statement_timeout_ms=settings.REVIEW_STATEMENT_TIMEOUT_MS,
            for_page=for_page,
        )
    if not allowed:
        # The renew and the claim are gated on the same check: nothing was written.
        raise NotPermitted("You do not have access to this queue.")
    if renewed is not None:
        return renewed
    if claimed is not None:
        logger.info(
            "item claimed",
            extra=log_extra(
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
    with transaction.atomic():
        guard_timeouts()
        # The claim itself refuses a worker who may not review the queue (leases_sql.CLAIM_ITEMS, as
        # the statement runs); only an empty batch needs the question asked, to say why.
        items = ReviewItem.objects.claim(
            queue_id=queue.pk,
            owner_id=signed_in_id(worker),
            limit=n,
            ttl=ttl,
            max_leases=_max_leases(queue),
            release_skip=queue.release_skip,
        )
        if not items and not user_can_review(user=worker, queue=queue):
            raise NotPermitted("You do not have access to this queue.")
    logger.info(
        "batch claimed", extra=log_extra(queue=queue.slug, reviewer=worker.pk, count=len(items))
    )
    return items


def item_queue_id(*, item_id: int) -> int | None:
    """Return the queue an item is in now, for a caller that knows only the item's id.

    One primary-key read. Callers that loaded the item (the console) pass its queue instead:
    the fenced statements name the item with its queue so that, distributed by queue, each
    goes to one shard (docs/scaling.md); this read by id alone would not.
    """
    return ReviewItem.objects.filter(pk=item_id).values_list("queue_id", flat=True).first()


def renew_lease(
    *, item_id: int, reviewer: User, lease_token: uuid.UUID | str, queue_id: int | None = None
) -> datetime:
    """Extend the reviewer's lease by the queue's TTL; StaleLease if it is no longer theirs.

    queue_id is the queue the caller found the item in; without it the item's is read first.
    """
    token = parse_token(lease_token)
    if queue_id is None:
        queue_id = item_queue_id(item_id=item_id)
    queue = Queue.objects.filter(pk=queue_id).only("lease_ttl").first() if queue_id else None
    if queue is None:
        raise StaleLease()
    with transaction.atomic():
        guard_timeouts()
        expires = ReviewItem.objects.renew(
            item_id=item_id,
            queue_id=queue.pk,
            lease_token=token,
            owner_id=signed_in_id(reviewer),
            ttl=queue.lease_ttl,
        )
    if expires is None:
        # The statement renews nothing for a holder who may no longer review the queue.
        if not user_can_review(user=reviewer, queue=queue.pk):
            raise NotPermitted("You no longer have access to this queue.")
        raise explain_stale_lease(item_id=item_id, user=reviewer)
    return expires


def release_lease(
    *, item_id: int, reviewer: User, lease_token: uuid.UUID | str, queue_id: int | None = None
) -> None:
    """Give the item back to its queue; StaleLease if the lease is no longer the reviewer's.

    queue_id is the queue the caller found the item in; without it the item's is read first.
    """
    token = parse_token(lease_token)
    if queue_id is None:
        queue_id = item_queue_id(item_id=item_id)
    released = False
    if queue_id is not None:
        with transaction.atomic():
            guard_timeouts()
            released = ReviewItem.objects.release(
                item_id=item_id,
                queue_id=queue_id,
                lease_token=token,
                owner_id=signed_in_id(reviewer),
            )
    if not released:
        raise explain_stale_lease(item_id=item_id, user=reviewer)
    logger.info("item released", extra=log_extra(item_id=item_id, reviewer=reviewer.pk))


NOTHING_RECORDED = "Nothing from this page was recorded."
_LEASE_EVENTS = (
    ItemEventKind.CLAIMED,
    ItemEventKind.RECLAIMED,
    ItemEventKind.RELEASED,
    ItemEventKind.AUTO_ESCALATED,
)


def _name(user: object) -> str:
    return user.get_short_name() or user.get_username()  # type: ignore[attr-defined]


def explain_stale_lease(*, item_id: int, user: User) -> StaleLease:
    """A StaleLease that says what happened to the item since the user's lease on it.

    Read after the refused write rolled back, from the item's state, its lease events since
    the user last claimed it, and its decision: released by you, taken by someone else,
    decided, escalated, or opened again by you in another tab.
    """
    item = ReviewItem.objects.select_related("lease_owner").filter(pk=item_id).first()
    if item is None:
        return StaleLease()
    events = list(
        ItemEvent.objects.filter(item_id=item_id, kind__in=_LEASE_EVENTS)
        .order_by("at", "id")
        .values_list("kind", "actor_id")
    )
    claims = [
        i
        for i, (kind, actor) in enumerate(events)
        if actor == user.pk and kind in (ItemEventKind.CLAIMED, ItemEventKind.RECLAIMED)
    ]
    since = events[claims[-1] + 1 :] if claims else events
    released_by_me = any(k == ItemEventKind.RELEASED and a == user.pk for k, a in since)

    if item.state in (ItemState.DECIDED, ItemState.AWAITING_CHECK):
        # The latest round's decision (a checker's return opens a new round).
        decision = (
            Decision.objects.select_related("reviewer")
            .filter(item_id=item_id)
            .exclude(verdict=Verdict.OVERTURN)
            .order_by("-id")
            .first()
        )
        if decision is not None and decision.reviewer_id == user.pk:
            return StaleLease(
                f"You already decided this item ({decision.get_verdict_display().lower()}), "
                f"perhaps in another tab. {NOTHING_RECORDED}",
                "decided_by_you",
            )
        if decision is not None and decision.verdict == Verdict.ESCALATE:
            return StaleLease(
                f"{_name(decision.reviewer)} escalated this item while you had it open. "
                f"{NOTHING_RECORDED}",
                "escalated",
            )
        who = _name(decision.reviewer) if decision is not None else "Someone else"
        return StaleLease(
            f"{who} decided this item while you had it open. {NOTHING_RECORDED}", "decided"
        )
    if any(kind == ItemEventKind.AUTO_ESCALATED for kind, _ in since):
        return StaleLease(
            "This item was moved to the escalation queue after being left undecided too often. "
            + NOTHING_RECORDED,
            "escalated",
        )
    if item.state == ItemState.LEASED and item.lease_owner_id == user.pk:
        return StaleLease(
            "You have this item open again under a newer lease (another tab or a later Next "
            f"item); carry on there, or reload this page. {NOTHING_RECORDED}",
            "reopened",
        )
    if item.state == ItemState.LEASED:
        other = _name(item.lease_owner)
        if released_by_me:
            message, what = f"You released this item and {other} has taken it since.", "taken"
        elif claims:
            message, what = f"{other} took this item after your lease ran out.", "taken"
        else:
            message, what = f"{other} is reviewing this item; it is not yours to decide.", "held"
        return StaleLease(f"{message} {NOTHING_RECORDED}", what)
    if item.state == ItemState.HELD:
        # Put on hold by its holder (perhaps this user in another tab).
        return StaleLease(
            f"This item is on hold until {local_text(item.hold_until)}; it comes back to the "
            f"queue then. {NOTHING_RECORDED}",
            "on_hold",
        )
    if released_by_me:
        return StaleLease(
            "You released this item (perhaps in another tab), so it went back to the queue. "
            + NOTHING_RECORDED,
            "released_by_you",
        )
    if any(kind == ItemEventKind.RELEASED for kind, _ in since):
        return StaleLease(
            f"This item was released back to the queue. {NOTHING_RECORDED}", "released"
        )
    return StaleLease()
