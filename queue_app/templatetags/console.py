"""Template filters for the reviewer console."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from queue_app.console.evidence_display import format_amount
from queue_app.datetimes import time_tag
from queue_app.suggestion_words import decision_seen_words

register = template.Library()


@register.filter
def mmss(seconds: Any) -> str:
    """Format a number of seconds as m:ss (or h:mm:ss for long leases)."""
    try:
        total = max(int(seconds), 0)
    except (TypeError, ValueError):
        return ""
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@register.filter
def amount(value: Any) -> str:
    """Format a number exactly, with thousands separators (never through float)."""
    return format_amount(value)


@register.filter
def when(value: datetime | None) -> SafeString:
    """Show a moment the one way every page does: local, to the second, zone named."""
    return time_tag(value)


@register.filter
def waited(since: datetime | None, now: datetime | None = None) -> str:
    """Say how long something has waited: "under a minute" rather than "0 minutes"."""
    if since is None:
        return ""
    now = now or timezone.now()
    if (now - since).total_seconds() < 60:
        return "under a minute"
    return timesince(since, now)


@register.filter
def duration(value: Any) -> str:
    """Say a duration the way /ops/ does: 38s, 4m 12s, 2h 03m ("n/a" for none)."""
    from queue_app.ops.views import human_duration

    return human_duration(value)


@register.filter
def suggestion_seen_words(decision: Any) -> str:
    """Say what the decision's maker saw of the machine suggestion, and whether it followed."""
    return decision_seen_words(decision)
