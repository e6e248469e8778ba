"""local_text prints what Django's date format prints, without parsing the format each time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import dateformat, timezone

from queue_app.datetimes import DATETIME_FORMAT, local_text

ZONES = [
    "UTC",
    "Europe/Amsterdam",
    "America/New_York",
    "Australia/Lord_Howe",  # a clock change of 30 minutes
    "Asia/Kolkata",
    "America/St_Johns",
    "Pacific/Chatham",  # an offset of 12:45 / 13:45
]


def _instants():
    # Every 15 minutes through the days of 2026's clock changes on both hemispheres, plus a
    # spread over the year and the edges of the calendar the database can hold.
    for day in (
        "2026-03-08",
        "2026-03-29",
        "2026-04-05",
        "2026-09-27",
        "2026-10-04",
        "2026-10-25",
        "2026-11-01",
    ):
        start = datetime.fromisoformat(day).replace(tzinfo=UTC) - timedelta(hours=14)
        for quarter in range(48 * 4):
            yield start + timedelta(minutes=15 * quarter, seconds=7, microseconds=999_999)
    for week in range(53):
        yield datetime(2026, 1, 1, 12, 34, 56, tzinfo=UTC) + timedelta(weeks=week)
    yield datetime(1970, 1, 1, tzinfo=UTC)
    yield datetime(9999, 12, 30, 23, 59, 59, tzinfo=UTC)
    yield datetime(2, 1, 2, tzinfo=UTC)  # a year Django prints with leading zeros


INSTANTS = list(_instants())


@pytest.mark.parametrize("zone", ZONES)
def test_local_text_prints_what_djangos_format_prints(zone):
    with timezone.override(ZoneInfo(zone)):
        for instant in INSTANTS:
            expected = dateformat.format(timezone.localtime(instant), DATETIME_FORMAT)
            assert local_text(instant) == expected, instant
            # The same instant given in another zone prints the same.
            assert local_text(instant.astimezone(ZoneInfo("Asia/Tokyo"))) == expected


def test_the_ambiguous_hour_is_printed_as_django_prints_it():
    # 2026-10-25 02:30 happens twice in Amsterdam; Django names no zone for it.
    with timezone.override(ZoneInfo("Europe/Amsterdam")):
        first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
        second = first + timedelta(hours=1)
        assert local_text(first) == local_text(second) == "2026-10-25 02:30:00 "
        assert local_text(second + timedelta(hours=1)) == "2026-10-25 03:30:00 CET"


def test_nothing_prints_nothing():
    assert local_text(None) == ""
