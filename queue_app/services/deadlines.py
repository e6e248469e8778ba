"""Deadlines: an item's due_at at intake, and how far it is from now, in words."""

from __future__ import annotations

from datetime import datetime, timedelta

from queue_app.datetimes import LATEST, moment_problem
from queue_app.errors import InvalidDeadline, InvalidHoldTime
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
    not bad input); a due_at outside the time rule (datetimes.moment_problem), both fields at
    once, or an SLA out of range is refused.
    """
    if due_at is not None and sla_seconds is not None:
        raise InvalidDeadline("Give either due_at or sla_seconds, not both.")
    if due_at is not None:
        if problem := moment_problem(due_at):
            raise InvalidDeadline(f"due_at {problem}.")
        return due_at
    if sla_seconds is not None:
        low, high = SLA_SECONDS_RANGE
        if not low <= sla_seconds <= high:
            raise InvalidDeadline(f"sla_seconds must be between {low} and {high}.")
        return received_at + timedelta(seconds=sla_seconds)
    if queue.default_sla is not None:
        if queue.default_sla >= LATEST - received_at:
            # Only a queue configured with a default SLA of centuries gets here.
            raise InvalidDeadline(
                f"The queue's default SLA would put the deadline past 2999-12-31 (UTC); "
                f"fix the queue {queue.slug!r} or send due_at."
            )
        return received_at + queue.default_sla
    return None


DEADLINE_PAST_RANGE = (
    "Holding until then would move the item's deadline past 2999-12-31 (UTC); "
    "choose an earlier resume time."
)


def deadline_after_hold(*, due_at: datetime | None, held_for: timedelta) -> datetime | None:
    """Return the deadline a hold of held_for moves due_at to; InvalidHoldTime past the range."""
    if due_at is None:
        return None
    if held_for >= LATEST - due_at:
        # The stored range (item_due_at_in_range) would refuse the write; say why instead.
        raise InvalidHoldTime(DEADLINE_PAST_RANGE)
    return due_at + held_for


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
