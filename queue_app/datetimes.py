"""How every page shows a moment, and the one rule every moment a person or client types obeys.

Shown: in the viewer's time zone, to the second, zone named.

One format for the console, /ops/ and the admin: "2026-11-30 16:20:08 CET". Date and time in
ISO 8601 order with seconds, because auditors compare the timeline, decisions and exports to
the second; the zone's abbreviation, because a time without one is a guess. Django renders
model fields with the same format (reviewconsole/formats/en/formats.py).
"""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import cast

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

# PostgreSQL's timestamptz input reads offsets up to 15:59 either way; Python's parsers (and
# pydantic's) take up to 23:59, so a time that passed them could still fail the write.
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)
# Every moment the system is given (deadlines, resume times, export bounds) lies in
# [EARLIEST, LATEST). Far inside what Python can show in any zone and what a deadline can be
# pushed by a hold, and the same range as the check on a stored deadline (item_due_at_in_range).
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)


def moment_problem(value: datetime) -> str | None:
    """Return why a given moment is refused (no time zone, offset, range), or None if it is fine."""
    offset = value.utcoffset()
    if value.tzinfo is None or offset is None:
        return "must carry a time zone (e.g. 2026-12-01T17:00:00Z or +01:00)"
    if abs(offset) > MAX_UTC_OFFSET:
        return "must have a time-zone offset between -15:59 and +15:59"
    if not EARLIEST <= value < LATEST:
        return "must lie between 2000-01-01 and 2999-12-31 (UTC)"
    return None


# Django date-format syntax; reviewconsole/formats/en/formats.py sets DATETIME_FORMAT to it.
DATETIME_FORMAT = "Y-m-d H:i:s T"


def local_text(value: datetime | None) -> str:
    """Return the moment in the current zone as "2026-11-30 16:20:08 CET" ("" for None).

    Exactly what dateformat.format(..., DATETIME_FORMAT) prints, the zone's name left out in
    the hour a clock change makes ambiguous as Django leaves it out, without parsing the format
    string on every call: a quarter of the time, and list pages print hundreds of these.
    tests/test_local_text.py compares the two over clock changes in several zones.
    """
    if value is None:
        return ""
    local = timezone.localtime(value)
    # localtime() returns an aware datetime: its tzinfo is never None.
    zone = cast(tzinfo, local.tzinfo)
    if zone.utcoffset(local.replace(fold=not local.fold)) != zone.utcoffset(local):
        name = ""
    else:
        name = str(zone.tzname(local))
    return (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d} "
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d} {name}"
    )


def time_tag(value: datetime | None) -> SafeString:
    """Return the moment as a <time> element: local text, the UTC instant for machines."""
    if value is None:
        return format_html("{}", "")
    instant = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return format_html('<time datetime="{}">{}</time>', instant, local_text(value))


def zone_abbreviation() -> str:
    """Return the current zone's abbreviation now ("CET", "UTC"), for captions."""
    return timezone.localtime().strftime("%Z")


def add_months(day: date, months: int) -> date:
    """Return the same day `months` later (the month's last day when it has no such day)."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return day.replace(
        year=year, month=month, day=min(day.day, calendar.monthrange(year, month)[1])
    )
