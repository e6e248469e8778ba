"""What the console's pages show of deadlines, holds and the subject's history.

Kept apart from views.py: the item page and home page call in here for their extra context;
the hold form posts to deadline_views.item_hold.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any, cast

from django import forms
from django.db.models import Count, F, Q
from django.http import HttpRequest
from django.utils import timezone

from queue_app.datetimes import LATEST
from queue_app.forms import LeaseForm, MomentField
from queue_app.models import DEADLINE_OPEN_STATES, HoldReason, ItemState, Queue, ReviewItem
from queue_app.services import (
    deadline_words,
    is_breached,
    subject_history,
)
from queue_app.services.deadlines import span_words

# What the hold form offers first: a day, or the queue's maximum if that is shorter.
DEFAULT_HOLD = timedelta(days=1)
# The one way the console writes a time (as the item page and the messages print it). The
# browser's datetime-local picker showed the reader's locale (12/07/2026, 09:30 AM) instead, so
# the form takes text in this format; what the picker posted ("2026-12-07T09:30") still parses,
# for a page opened before the change.
HOLD_FORMAT = "%Y-%m-%d %H:%M"
HOLD_FORMAT_WORDS = "YYYY-MM-DD HH:MM"
# Django would also read a bare date (as midnight) or an offset; a resume time is typed, so
# only what the form asks for (or the picker posted) is taken.
HOLD_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?")


class HoldTimeField(MomentField):
    """A hold's resume time, written in HOLD_FORMAT, in the server's time zone."""

    def to_python(self, value: Any) -> datetime | None:
        """Refuse text not in the format, then parse it under the rule every time obeys."""
        if isinstance(value, str) and value.strip() and not HOLD_TEXT.fullmatch(value.strip()):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class HoldForm(LeaseForm):
    """Put the item on hold: a reason of the queue's and a resume time (in TIME_ZONE)."""

    reason_code = forms.SlugField(
        max_length=64, error_messages={"required": "Choose why the item waits."}
    )
    hold_until = HoldTimeField(
        input_formats=[HOLD_FORMAT, "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"],
        error_messages={
            "required": "Say when the item should come back.",
            "invalid": f"Give the resume time as a date and time, {HOLD_FORMAT_WORDS} "
            "(for example 2026-12-07 09:30).",
        },
    )


def deadline_context(item: ReviewItem, now: datetime) -> dict[str, Any]:
    """What the status box says about the item's deadline and hold."""
    context: dict[str, Any] = {
        "due_words": deadline_words(due_at=item.due_at, now=now),
        "breached": is_breached(
            due_at=item.due_at, now=now, decided_at=item.decided_at, state=item.state
        ),
        "at_risk": (
            item.due_at is not None
            and item.state != ItemState.DECIDED
            and now <= item.due_at < now + item.queue.sla_warning
        ),
    }
    if item.state == ItemState.HELD:
        # A held item has its reason and time: a check constraint on the item says so.
        hold_reason_id, hold_until = cast(int, item.hold_reason_id), cast(datetime, item.hold_until)
        context["hold_reason"] = HoldReason.objects.filter(pk=hold_reason_id).first()
        context["hold_due"] = hold_until <= now
    return context


def hold_form_context(
    item: ReviewItem, now: datetime, hold_reasons: list[HoldReason]
) -> dict[str, Any]:
    """The hold form's choices and bounds, for the holder of the lease."""
    # The form offers no time past the range every time input obeys (datetimes.LATEST): a
    # queue may allow holds longer than the calendar has room for.
    longest = min(item.queue.max_hold, LATEST - timedelta(minutes=1) - now)
    latest = now + longest
    default = min(now + DEFAULT_HOLD, latest)
    local = timezone.localtime
    return {
        "hold_reasons": hold_reasons,
        "hold_max": local(latest).strftime(HOLD_FORMAT),
        "hold_default": local(default).strftime(HOLD_FORMAT),
        "hold_format": HOLD_FORMAT_WORDS,
        "hold_zone": timezone.get_current_timezone_name(),
        "max_hold_words": span_words(item.queue.max_hold.total_seconds()),
    }


def item_page_extras(
    request: HttpRequest,
    item: ReviewItem,
    *,
    mine: bool,
    now: datetime,
    hold_reasons: list[HoldReason],
) -> dict[str, Any]:
    """Everything the item page shows of deadlines and holds, in one dict for its context;
    hold_reasons are the queue's active ones (services/item_page.py read them with the page's
    other rows)."""
    extras = deadline_context(item, now)
    extras["subject_items"] = subject_history(
        subject_key=item.subject_key, user=request.user, exclude_id=item.pk
    )
    if mine:
        extras.update(hold_form_context(item, now, hold_reasons))
    return extras


def home_deadline_counts(queues: list[Queue], now: datetime) -> None:
    """Set breached_count and at_risk_count on each queue: open items past their deadline, and
    due within the queue's warning window. One grouped query on item_open_work_due."""
    rows = (
        ReviewItem.objects.filter(
            queue_id__in=[q.pk for q in queues],
            state__in=DEADLINE_OPEN_STATES,
            due_at__isnull=False,
        )
        .order_by()
        .values("queue_id")
        .annotate(
            breached=Count("pk", filter=Q(due_at__lt=now)),
            at_risk=Count(
                "pk", filter=Q(due_at__gte=now, due_at__lt=now + F("queue__sla_warning"))
            ),
        )
    )
    by_queue = {row["queue_id"]: row for row in rows}
    for queue in queues:
        row = by_queue.get(queue.pk, {})
        queue.breached_count = row.get("breached", 0)
        queue.at_risk_count = row.get("at_risk", 0)
