"""Holds: a reviewer parks an item awaiting information; it comes back by itself, or sooner.

A hold is written by the lease holder, fenced by the lease token like decide and release
(holds_sql.HOLD_ITEM). A held item is in no claim index but item_held_until, so nobody can claim it
before its resume time; the first claim after it takes it (leases_sql._CLAIM, "resumed"), with no
sweeper. Replacing its evidence through the API brings it back at once (holds_sql.RESUME_HELD_ITEM).
The deadline clock pauses while held: due_at moves by exactly the time spent on hold.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from queue_app.datetimes import moment_problem
from queue_app.errors import InvalidHoldReason, InvalidHoldTime, NotPermitted, StaleLease
from queue_app.models import HoldReason, ItemEvent, ItemEventKind, ItemState, Queue, ReviewItem
from queue_app.services._common import (
    User,
    guard_timeouts,
    log_extra,
    logger,
    parse_token,
    signed_in_id,
)
from queue_app.services.access import user_can_review
from queue_app.services.deadlines import DEADLINE_PAST_RANGE, deadline_after_hold, span_words
from queue_app.services.leases import explain_stale_lease


def hold_reasons_for(*, queue: Queue | int) -> QuerySet[HoldReason]:
    """Return the queue's hold reasons a reviewer may choose now (not retired)."""
    queue_id = queue if isinstance(queue, int) else queue.pk
    return HoldReason.objects.filter(queue_id=queue_id, retired_at__isnull=True).order_by("label")


def hold_item(
    *,
    item_id: int,
    reviewer: User,
    lease_token: uuid.UUID | str,
    reason_code: str,
    hold_until: datetime,
) -> dict[str, Any]:
    """Put an item the reviewer holds on hold until hold_until; return the held row's columns
    and the item's state (held).

    StaleLease if the lease is no longer theirs; InvalidHoldReason for a code outside the
    queue's active hold reasons; InvalidHoldTime for a time not in (now, now + max_hold]. A
    retry of a hold that already went through (the same reviewer, token, reason and time: a
    double click, a resent request after a lost answer) finds its lease ended by the first and
    returns that hold instead, with "retried" set and the item's state now
    (find_completed_hold).
    """
    fields: dict[str, Any] = {"item_id": item_id, "reviewer": reviewer, "reason_code": reason_code}
    try:
        return _hold(lease_token=lease_token, hold_until=hold_until, **fields)
    except (StaleLease, InvalidHoldReason, InvalidHoldTime):
        earlier = find_completed_hold(lease_token=lease_token, hold_until=hold_until, **fields)
        if earlier is None:
            raise
        return earlier


def _hold(
    *,
    item_id: int,
    reviewer: User,
    lease_token: uuid.UUID | str,
    reason_code: str,
    hold_until: datetime,
) -> dict[str, Any]:
    token = parse_token(lease_token)
    item = ReviewItem.objects.select_related("queue").filter(pk=item_id).first()
    if item is None:
        raise StaleLease()
    if not user_can_review(user=reviewer, queue=item.queue_id):
        raise NotPermitted("You no longer have access to this queue.")
    if not hold_reasons_for(queue=item.queue_id).filter(code=reason_code).exists():
        raise InvalidHoldReason()
    if problem := moment_problem(hold_until):
        raise InvalidHoldTime(f"The resume time {problem}.")
    now = timezone.now()
    # Compared as spans: now + max_hold could leave the calendar for a queue allowing centuries.
    if not (now < hold_until and hold_until - now <= item.queue.max_hold):
        longest = span_words(item.queue.max_hold.total_seconds())
        raise InvalidHoldTime(
            "The resume time must be in the future and no later than "
            f"{longest} from now (this queue's maximum hold)."
        )
    # The hold moves the deadline by its length: refused here, in words, where the stored
    # range would refuse the write.
    deadline_after_hold(due_at=item.due_at, held_for=hold_until - now)
    try:
        with transaction.atomic():
            guard_timeouts()
            held = ReviewItem.objects.hold(
                item_id=item_id,
                lease_token=token,
                owner_id=signed_in_id(reviewer),
                reason_code=reason_code,
                hold_until=hold_until,
            )
    except IntegrityError as exc:
        # The reason was retired between the check above and the write: the lookup in the
        # statement found nothing and item_hold_columns_match_state refused the row.
        if "item_hold_columns_match_state" in str(exc):
            raise InvalidHoldReason() from None
        # The database clock ran on past the check above and the deadline left its range.
        if "item_due_at_in_range" in str(exc):
            raise InvalidHoldTime(DEADLINE_PAST_RANGE) from None
        raise
    if held is None:
        # The fence refused (the usual case), access was revoked since the check above, or
        # the database clock moved the resume time out of bounds since then.
        still_mine = ReviewItem.objects.filter(
            pk=item_id, state="leased", lease_token=token, lease_owner_id=reviewer.pk
        ).exists()
        if not still_mine:
            raise explain_stale_lease(item_id=item_id, user=reviewer)
        if not user_can_review(user=reviewer, queue=item.queue_id):
            raise NotPermitted("You no longer have access to this queue.")
        raise InvalidHoldTime()
    logger.info(
        "item put on hold",
        extra=log_extra(
            item_id=item_id, reviewer=reviewer.pk, reason=reason_code, hold_until=str(hold_until)
        ),
    )
    return {**held, "state": ItemState.HELD, "hold_ended": False}


def find_completed_hold(
    *,
    item_id: int,
    reviewer: User,
    lease_token: uuid.UUID | str,
    reason_code: str,
    hold_until: datetime,
) -> dict[str, Any] | None:
    """Return the hold this exact request already made (a retry after a lost answer), if any:
    hold_until, due_at and reason_code as the held event recorded them, and the item's state
    now, and hold_ended: whether that hold has ended since (resumed, claimed again, decided;
    the item may even be held again by a later hold).

    The held event stores the lease token that fenced it, so a retry is recognised by what it
    names, as find_completed_decision recognises a decision's; a different reason or resume
    time under the same token is not a retry but a second hold, which the fence refuses.
    """
    try:
        token = parse_token(lease_token)
    except StaleLease:
        return None
    events = ItemEvent.objects.filter(
        item_id=item_id,
        kind=ItemEventKind.HELD,
        actor_id=reviewer.pk,
        detail__lease_token=str(token),
        detail__reason_code=reason_code,
    ).order_by("-id")
    for event in events:  # one at most: the hold ends the lease it was fenced by
        recorded = parse_datetime(event.detail.get("hold_until") or "")
        if recorded is not None and recorded == hold_until:
            due_at = event.detail.get("due_at")
            # Held now, and by this hold: no later one (a hold ended, claimed, held again).
            later = ItemEvent.objects.filter(
                item_id=OuterRef("pk"), kind=ItemEventKind.HELD, pk__gt=event.pk
            )
            now: Mapping[str, Any] = (
                ReviewItem.objects.filter(pk=item_id)
                .values("state", held_again=Exists(later))
                .first()
                or {}
            )
            still_held = now.get("state") == ItemState.HELD and not now["held_again"]
            # Ended since: the state now may still be "held", by a later hold under a later
            # lease, so whether this one still stands is said apart from the state.
            return {
                "reason_code": reason_code,
                "hold_until": recorded,
                "due_at": parse_datetime(due_at) if due_at else None,
                "state": now.get("state"),
                "retried": True,
                "hold_ended": not still_held,
            }
    return None


def resume_hold(*, item_id: int, actor: User | None, cause: str) -> dict[str, Any] | None:
    """Bring a held item back to its queue now; None if it was not held.

    Call with the item's row lock held (replace_evidence does): the unused part of the hold
    comes off due_at, and a resumed event records before and after.
    """
    actor_id = actor.pk if actor is not None and actor.is_authenticated else None
    resumed = ReviewItem.objects.resume_held(item_id=item_id, actor_id=actor_id, cause=cause)
    if resumed is not None:
        logger.info("hold ended early", extra=log_extra(item_id=item_id, cause=cause))
    return resumed
