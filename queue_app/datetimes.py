"""How every page shows a moment: in the viewer's time zone, to the second, zone named.

One format for the console, /ops/ and the admin: "2026-11-30 16:20:08 CET". Date and time in
ISO 8601 order with seconds, because auditors compare the timeline, decisions and exports to
the second; the zone's abbreviation, because a time without one is a guess. Django renders
model fields with the same format (reviewconsole/formats/en/formats.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

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
    zone = local.tzinfo
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
