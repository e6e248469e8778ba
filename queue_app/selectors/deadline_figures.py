"""Deadline and hold figures for /ops/, /metrics and doctor.

Two aggregate statements (ops_sql.SLA_OPEN, SLA_DECISIONS) answer for every queue at once.
Time-to-deadline at decision is "how much time was left when the verdict came": p50 and p90
over the last 24 hours, negative when the decision was late.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import ops as ops_sql
from queue_app.models import Queue
from queue_app.services.deadlines import span_words
from reviewconsole.routers import read_alias

SLA_WINDOW_HOURS = 24


@dataclass
class SlaFigures:
    queue_id: int
    slug: str
    name: str
    breached: int = 0
    breached_checks: int = 0  # of the breached, those awaiting their check
    at_risk: int = 0
    on_hold: int = 0
    due_back: int = 0
    oldest_hold_age: timedelta | None = None
    decided_with_deadline: int = 0
    decided_late: int = 0
    ttd_p50: timedelta | None = None
    ttd_p90: timedelta | None = None


def _seconds(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=float(value))


def read_sla(*, hours: int = SLA_WINDOW_HOURS) -> list[SlaFigures]:
    """Read the deadline and hold figures of every queue: three statements (the queues,
    SLA_OPEN, SLA_DECISIONS), whatever the sizes."""
    figures = {
        q.id: SlaFigures(queue_id=q.id, slug=q.slug, name=q.name)
        for q in Queue.objects.using(read_alias()).order_by("slug")
    }
    for row in fetch_dicts(ops_sql.SLA_OPEN, {}, using=read_alias()):
        if (f := figures.get(row["queue_id"])) is not None:
            f.breached, f.at_risk = row["breached"], row["at_risk"]
            f.breached_checks = row["breached_checks"]
            f.on_hold, f.due_back = row["on_hold"], row["due_back"]
            f.oldest_hold_age = _seconds(row["oldest_hold_seconds"])
    for row in fetch_dicts(ops_sql.SLA_DECISIONS, {"hours": hours}, using=read_alias()):
        if (f := figures.get(row["queue_id"])) is not None:
            f.decided_with_deadline, f.decided_late = row["samples"], row["late"]
            f.ttd_p50, f.ttd_p90 = _seconds(row["p50"]), _seconds(row["p90"])
    return list(figures.values())


def signed_duration(value: timedelta | None) -> str:
    """Say a time-to-deadline: "2 h 5 min left" or "10 min late" ("" for none)."""
    if value is None:
        return ""
    # From the seconds alone: a span is no moment, and a date it were added to could leave the
    # calendar Python knows.
    seconds = value.total_seconds()
    if seconds >= 0:
        return span_words(seconds) + " left"
    return span_words(-seconds) + " late"


def sla_rows(figures: list[SlaFigures]) -> list[dict[str, object]]:
    """The /ops/ table's rows: the figures with their durations in words."""
    return [
        {
            "f": f,
            "oldest_hold": signed_duration(f.oldest_hold_age).removesuffix(" left"),
            "p50": signed_duration(f.ttd_p50),
            "p90": signed_duration(f.ttd_p90),
            "p50_late": f.ttd_p50 is not None and f.ttd_p50 < timedelta(0),
            "p90_late": f.ttd_p90 is not None and f.ttd_p90 < timedelta(0),
        }
        for f in figures
    ]
