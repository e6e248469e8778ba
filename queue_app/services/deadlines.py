"""Deadlines: an item's due_at at intake, and how far it is from now, in words."""

from __future__ import annotations

from datetime import datetime, timedelta

from queue_app.errors import InvalidDeadline
from queue_app.models import ItemState, Queue

# An SLA longer than five years is a typo, not a service level.
SLA_SECONDS_RANGE = (1, 5 * 365 * 24 * 3600)


def initial_due_at(
    *,
    queue: Queue,
    received_at: datetime,
    due_at: datetime | None = None,
    sla_seconds: int | None = None,
) -> datetime | None:
    """Return a new item's deadline: due_at, else receipt + sla_seconds, else the queue default.

    An explicit due_at in the past is kept (the item arrives breached: that is a fact about it,
    not bad input); a naive due_at, both fields at once, or an SLA out of range is refused.
    """
    if due_at is not None and sla_seconds is not None:
        raise InvalidDeadline("Give either due_at or sla_seconds, not both.")
    if due_at is not None:
        if due_at.tzinfo is None or due_at.utcoffset() is None:
            raise InvalidDeadline(
                "due_at must carry a time zone (e.g. 2026-12-01T17:00:00Z or +01:00)."
            )
        return due_at
    if sla_seconds is not None:
        low, high = SLA_SECONDS_RANGE
        if not low <= sla_seconds <= high:
            raise InvalidDeadline(f"sla_seconds must be between {low} and {high}.")
        return received_at + timedelta(seconds=sla_seconds)
    if queue.default_sla is not None:
        return received_at + queue.default_sla
    return None


def span_words(seconds: float) -> str:
    """Say a span the way a person would: "2 d 3 h", "2 h 10 min", "5 min", "40 s"."""
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min"
    return f"{secs} s"


def deadline_words(*, due_at: datetime | None, now: datetime) -> str:
    """Return "due in 2 h 10 min", "overdue by 5 min", or "" for no deadline."""
    if due_at is None:
        return ""
    left = (due_at - now).total_seconds()
    if left >= 0:
        return f"due in {span_words(left)}"
    return f"overdue by {span_words(-left)}"


def is_breached(
    *,
    due_at: datetime | None,
    now: datetime,
    decided_at: datetime | None = None,
    state: str | None = None,
) -> bool:
    """Whether the deadline passed before the item's outcome was final (or, while it is open,
    before now). An item awaiting its check is still open: its decided_at is the maker's, and
    the deadline runs until the checker confirms it (CONFIRM_CHECK then sets decided_at)."""
    if due_at is None:
        return False
    if state == ItemState.AWAITING_CHECK:
        decided_at = None
    return (decided_at or now) > due_at
