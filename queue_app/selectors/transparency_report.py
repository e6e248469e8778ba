"""The transparency report: the counts the DSA's transparency reports ask for, for a period.

Read for /ops/transparency.csv|json and `manage.py export_transparency` from the statements of
reasons and the decisions of the queues whose decisions restrict someone: restrictions by
category and by ground (illegal content, or incompatible with the terms), by kind of restriction
(visibility, monetary, provision of service, account), the automated share of detection and of
the decision, the statements built, sent and failing, and the median time from intake to
decision; the appeals received, decided (upheld or reversed) and pending, the reversed share
with its Wilson interval, and the median time from an appeal's receipt to its decision. A few
statements whatever the number of queues (db/statements/transparency.py), each
per queue and over all queues; here only validation of the period and formatting.

The period is two calendar dates, both included, in the deployment's TIME_ZONE: from the start
of `from` to the end of `to`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.utils import timezone

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import transparency as transparency_sql
from queue_app.exports import neutralise_formula
from queue_app.second_person import Rate
from reviewconsole.routers import read_alias

# The key of the figures over every queue at once (never a queue's slug: slugs are [-a-z0-9]).
ALL_QUEUES = "*"
# A report covers at most this many days: a year and a day of leap (DSA reports are yearly or
# half-yearly); a longer one is split by the caller.
MAX_DAYS = 366

GROUNDS = ("DECISION_GROUND_ILLEGAL_CONTENT", "DECISION_GROUND_INCOMPATIBLE_CONTENT")
RESTRICTION_KINDS = ("visibility", "monetary", "provision", "account")
AUTOMATED_DECISION = ("fully", "partially", "not_automated")


class PeriodError(ValueError):
    """The period asked for is not one: the message says what to send instead."""


@dataclass(frozen=True)
class Period:
    first: date
    last: date

    @property
    def start(self) -> datetime:
        return timezone.make_aware(datetime.combine(self.first, time.min))

    @property
    def end(self) -> datetime:
        # Half-open: the start of the day after the last.
        return timezone.make_aware(datetime.combine(self.last + timedelta(days=1), time.min))


def _parse_day(value: str | None, name: str) -> date:
    if value is None or not str(value).strip():
        raise PeriodError(f"'{name}' is required: a date as YYYY-MM-DD.")
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise PeriodError(f"'{name}' must be a date as YYYY-MM-DD, not {value!r}.") from None


def parse_period(first: str | None, last: str | None) -> Period:
    """Return the period from two dates as YYYY-MM-DD, both included; PeriodError if it is not
    one (missing, unreadable, reversed, or longer than MAX_DAYS)."""
    period = Period(_parse_day(first, "from"), _parse_day(last, "to"))
    if period.last < period.first:
        raise PeriodError(
            f"'from' ({period.first.isoformat()}) is after 'to' ({period.last.isoformat()})."
        )
    days = (period.last - period.first).days + 1
    if days > MAX_DAYS:
        raise PeriodError(
            f"The period is {days} days; a report covers at most {MAX_DAYS}: split it."
        )
    return period


def default_period() -> Period:
    """This year so far: the first of January to today."""
    today = timezone.localdate()
    return Period(today.replace(month=1, day=1), today)


@dataclass
class AppealFigures:
    """Appeals as the period saw them (db/statements/transparency.py, TRANSPARENCY_APPEALS)."""

    received: int = 0
    decided: int = 0  # upheld or reversed
    upheld: int = 0
    reversed: int = 0
    closed: int = 0  # an overturn replaced the decision while the appeal waited
    pending: int = 0  # at the period's end
    pending_past_deadline: int = 0
    median_decide_seconds: float | None = None

    @property
    def reversed_share(self) -> Rate:
        return Rate(self.reversed, self.decided)


@dataclass
class QueueReport:
    """The figures of one queue, or of every queue (slug ALL_QUEUES)."""

    slug: str
    name: str
    built: int = 0
    restrictions: int = 0
    lifted: int = 0
    by_ground: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    # (category, ground) -> restrictions; '' where a refused statement names none.
    by_category: dict[tuple[str, str], int] = field(default_factory=dict)
    detection_automated: int = 0
    decision_automated: dict[str, int] = field(default_factory=dict)
    sent: int = 0
    in_database: int = 0
    refused: int = 0
    dead: int = 0
    waiting: int = 0
    decisions: int = 0
    restricting_decisions: int = 0
    overturns: int = 0
    median_decision_seconds: float | None = None
    median_restriction_seconds: float | None = None
    appeals: AppealFigures = field(default_factory=AppealFigures)

    @property
    def failing(self) -> int:
        return self.refused + self.dead

    def share(self, count: int) -> float | None:
        """count as a share of the restrictions; None without any."""
        return count / self.restrictions if self.restrictions else None


@dataclass
class TransparencyReport:
    period: Period
    time_zone: str
    queues: list[QueueReport]
    all: QueueReport


def read_transparency_report(period: Period) -> TransparencyReport:
    """Every figure of the period, per queue and over all queues: 4 statements."""
    using = read_alias()
    params = {"start": period.start, "end": period.end}
    reports: dict[str | None, QueueReport] = {None: QueueReport(ALL_QUEUES, "All queues")}
    for row in fetch_dicts(transparency_sql.TRANSPARENCY_STATEMENTS, params, using=using):
        if row["slug"] is None:
            report = reports[None]
        else:
            report = reports.setdefault(row["slug"], QueueReport(row["slug"], row["queue_name"]))
        for name in (
            "built",
            "restrictions",
            "lifted",
            "detection_automated",
            "sent",
            "in_database",
            "refused",
            "dead",
            "waiting",
        ):
            setattr(report, name, row[name])
        report.by_ground = {
            GROUNDS[0]: row["ground_illegal"],
            GROUNDS[1]: row["ground_incompatible"],
        }
        report.by_kind = {kind: row[f"kind_{kind}"] for kind in RESTRICTION_KINDS}
        report.decision_automated = {k: row[f"decision_{k}"] for k in AUTOMATED_DECISION}
    for row in fetch_dicts(transparency_sql.TRANSPARENCY_CATEGORIES, params, using=using):
        report = reports[row["slug"]]
        report.by_category[(row["category"], row["ground"])] = row["restrictions"]
    for row in fetch_dicts(transparency_sql.TRANSPARENCY_HANDLING, params, using=using):
        if row["slug"] is not None and row["slug"] not in reports:
            # Decided, but no statement in the period (nothing restricted, say).
            reports[row["slug"]] = QueueReport(row["slug"], row["queue_name"])
        report = reports[row["slug"]]
        report.decisions = row["decisions"]
        report.restricting_decisions = row["restricting"]
        report.overturns = row["overturns"]
        report.median_decision_seconds = _seconds(row["median_decision_seconds"])
        report.median_restriction_seconds = _seconds(row["median_restriction_seconds"])
    for row in fetch_dicts(transparency_sql.TRANSPARENCY_APPEALS, params, using=using):
        if row["slug"] is not None and row["slug"] not in reports:
            reports[row["slug"]] = QueueReport(row["slug"], row["queue_name"])
        reports[row["slug"]].appeals = AppealFigures(
            received=row["received"],
            decided=row["decided"],
            upheld=row["upheld"],
            reversed=row["reversed"],
            closed=row["closed"],
            pending=row["pending"],
            pending_past_deadline=row["pending_past_deadline"],
            median_decide_seconds=_seconds(row["median_decide_seconds"]),
        )
    everything = reports.pop(None)
    return TransparencyReport(
        period=period,
        time_zone=timezone.get_current_timezone_name(),
        queues=sorted(reports.values(), key=lambda r: r.slug),
        all=everything,
    )


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)


# -- export ---------------------------------------------------------------------------------------

EXPORT_COLUMNS = ("queue", "figure", "group", "ground", "value")


def export_rows(report: TransparencyReport) -> list[dict[str, Any]]:
    """The figures as flat rows (EXPORT_COLUMNS), every queue then all queues ("*")."""
    out: list[dict[str, Any]] = []

    def put(queue: str, figure: str, value: Any, group: str = "", ground: str = "") -> None:
        out.append(
            {"queue": queue, "figure": figure, "group": group, "ground": ground, "value": value}
        )

    for q in [*report.queues, report.all]:
        put(q.slug, "restrictions", q.restrictions)
        for ground, count in q.by_ground.items():
            put(q.slug, "restrictions_by_ground", count, ground=ground)
        for (category, ground), count in sorted(q.by_category.items()):
            put(q.slug, "restrictions_by_category", count, group=category, ground=ground)
        for kind, count in q.by_kind.items():
            put(q.slug, "restrictions_by_kind", count, group=kind)
        put(q.slug, "automated_detection", q.detection_automated)
        put(q.slug, "automated_detection_share", q.share(q.detection_automated))
        for how, count in q.decision_automated.items():
            put(q.slug, "automated_decision", count, group=how)
        automated = q.decision_automated.get("fully", 0) + q.decision_automated.get("partially", 0)
        put(q.slug, "automated_decision_share", q.share(automated), group="fully_or_partially")
        put(q.slug, "restrictions_lifted", q.lifted)
        put(q.slug, "statements_built", q.built)
        put(q.slug, "statements_sent", q.sent)
        put(q.slug, "statements_in_database", q.in_database)
        put(q.slug, "statements_failing", q.refused, group="refused")
        put(q.slug, "statements_failing", q.dead, group="dead")
        put(q.slug, "statements_waiting", q.waiting)
        put(q.slug, "decisions", q.decisions)
        put(q.slug, "restricting_decisions", q.restricting_decisions)
        put(q.slug, "overturns", q.overturns)
        put(q.slug, "median_seconds_intake_to_decision", q.median_decision_seconds)
        put(
            q.slug,
            "median_seconds_intake_to_decision",
            q.median_restriction_seconds,
            group="restricting",
        )
        a = q.appeals
        put(q.slug, "appeals_received", a.received)
        put(q.slug, "appeals_decided", a.decided)
        put(q.slug, "appeals_decided", a.upheld, group="upheld")
        put(q.slug, "appeals_decided", a.reversed, group="reversed")
        put(q.slug, "appeals_closed", a.closed)
        put(q.slug, "appeals_pending", a.pending)
        put(q.slug, "appeals_pending", a.pending_past_deadline, group="past_deadline")
        share = a.reversed_share
        put(q.slug, "appeals_reversed_share", share.value)
        interval = share.interval
        put(q.slug, "appeals_reversed_share", interval[0] if interval else None, group="low")
        put(q.slug, "appeals_reversed_share", interval[1] if interval else None, group="high")
        put(q.slug, "median_seconds_appeal_to_decision", a.median_decide_seconds)
    return out


def export_csv(report: TransparencyReport) -> str:
    """The flat rows as CSV text after a line naming the period; shares to 4 places (text cells
    neutralised, as every export: a category or slug is never a formula)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS)
    writer.writeheader()
    writer.writerow(
        {
            "queue": ALL_QUEUES,
            "figure": "period",
            "group": report.period.first.isoformat(),
            "ground": report.period.last.isoformat(),
            "value": report.time_zone,
        }
    )
    for row in export_rows(report):
        writer.writerow(
            {
                key: f"{value:.4f}"
                if isinstance(value, float)
                else ("" if value is None else neutralise_formula(value))
                for key, value in row.items()
            }
        )
    return buffer.getvalue()


def _queue_json(q: QueueReport) -> dict[str, Any]:
    automated = q.decision_automated.get("fully", 0) + q.decision_automated.get("partially", 0)
    return {
        "queue": q.slug,
        "name": q.name,
        "restrictions": {
            "total": q.restrictions,
            "by_ground": q.by_ground,
            "by_category": [
                {"category": category, "ground": ground, "restrictions": count}
                for (category, ground), count in sorted(q.by_category.items())
            ],
            "by_kind": q.by_kind,
            "lifted": q.lifted,
        },
        "automation": {
            "detection": q.detection_automated,
            "detection_share": q.share(q.detection_automated),
            "decision": q.decision_automated,
            "decision_share": q.share(automated),
        },
        "statements": {
            "built": q.built,
            "sent": q.sent,
            "in_database": q.in_database,
            "failing": {"refused": q.refused, "dead": q.dead},
            "waiting": q.waiting,
        },
        "decisions": {
            "total": q.decisions,
            "restricting": q.restricting_decisions,
            "overturns": q.overturns,
            "median_seconds_intake_to_decision": q.median_decision_seconds,
            "median_seconds_intake_to_restriction": q.median_restriction_seconds,
        },
        "appeals": _appeals_json(q.appeals),
    }


def _appeals_json(a: AppealFigures) -> dict[str, Any]:
    share = a.reversed_share
    interval = share.interval
    return {
        "received": a.received,
        "decided": a.decided,
        "upheld": a.upheld,
        "reversed": a.reversed,
        "closed": a.closed,
        "pending": a.pending,
        "pending_past_deadline": a.pending_past_deadline,
        "reversed_share": share.value,
        "reversed_share_low": interval[0] if interval else None,
        "reversed_share_high": interval[1] if interval else None,
        "median_seconds_received_to_decided": a.median_decide_seconds,
    }


def export_json(report: TransparencyReport) -> dict[str, Any]:
    """The figures as one JSON document: the period, each queue's and all queues' figures."""
    return {
        "period": {
            "from": report.period.first.isoformat(),
            "to": report.period.last.isoformat(),
            "time_zone": report.time_zone,
        },
        "queues": [_queue_json(q) for q in report.queues],
        "all": _queue_json(report.all),
    }
