"""Read one reviewer's figures for My work (statements in queue_app/db/statements/mywork.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import mywork as mywork_sql
from queue_app.models import Decision, DecisionStatus, ItemState, ReviewItem
from queue_app.models.subject_search import prefix_query, subject_has_words
from queue_app.second_person import Rate
from queue_app.selectors.agreement import Agreement, agreement_of, qa_review_rows
from queue_app.selectors.lane_figures import interval_text, percent

WEEK = timedelta(days=7)
MONTH = timedelta(days=30)
# A search answers at most this many decisions, newest first; a subject search alone reads at
# most the reviewer's newest SUBJECT_SEARCH_SCOPE decisions of SUBJECT_SEARCH_DAYS (an item id
# or a day is exact and needs no bound of its own).
SEARCH_LIMIT = 50
SUBJECT_SEARCH_DAYS = 365
SUBJECT_SEARCH_SCOPE = 5000
# At most this many of my holds are listed (soonest back first).
HOLDS_LIMIT = 100
# Handling time is measured on at most this many of my newest decisions of the 30 days.
HANDLING_SAMPLE = 2000


@dataclass
class VerdictCounts:
    verdict: str
    today: int
    week: int
    month: int
    overturned: int
    # awaiting_check or returned: verdicts that do not stand, counted apart; None: the rest.
    held: str | None = None

    @property
    def label(self) -> str:
        """The row's name: the verdict, and why it does not stand when it does not."""
        name = self.verdict.capitalize()
        return f"{name}, {DecisionStatus(self.held).label}" if self.held else name


@dataclass
class QueueCounts:
    queue_id: int
    name: str
    verdicts: list[VerdictCounts] = field(default_factory=list)

    def total(self, window: str) -> int:
        return sum(getattr(v, window) for v in self.verdicts)

    @property
    def today(self) -> int:
        return self.total("today")

    @property
    def week(self) -> int:
        return self.total("week")

    @property
    def month(self) -> int:
        return self.total("month")


@dataclass
class HandlingTime:
    queue_id: int | None
    name: str
    week_samples: int
    week_p50: timedelta | None
    week_p90: timedelta | None
    month_samples: int
    month_p50: timedelta | None
    month_p90: timedelta | None


@dataclass
class MyHold:
    id: int
    subject: str
    queue_name: str
    reason_code: str
    reason_label: str
    hold_until: datetime
    held_at: datetime
    due_at: datetime | None


@dataclass
class AgreementWindow:
    """My QA agreement over one of the page's windows (by when the QA review was recorded)."""

    window: str  # today, week, month
    label: str
    agreement: Agreement

    @property
    def verdict(self) -> Rate:
        return self.agreement.verdict

    @property
    def percent(self) -> str:
        return percent(self.verdict)  # formatted as /ops/ formats it

    @property
    def interval(self) -> str:
        return interval_text(self.verdict)


@dataclass
class MyWork:
    counts: list[QueueCounts]
    handling: list[HandlingTime]
    leases: list[ReviewItem]
    today_starts: datetime
    holds: list[MyHold] = field(default_factory=list)
    # Set when I made more decisions in 30 days than handling time samples: the newest count.
    handling_sample: int | None = None
    # Empty when no QA review of my decisions was recorded in the last 30 days.
    agreement: list[AgreementWindow] = field(default_factory=list)

    @property
    def totals(self) -> dict[str, int]:
        return {w: sum(q.total(w) for q in self.counts) for w in ("today", "week", "month")}

    @property
    def overturned(self) -> int:
        return sum(v.overturned for q in self.counts for v in q.verdicts)


def start_of_today(now: datetime | None = None) -> datetime:
    """Return local midnight (TIME_ZONE) of the current day, as an aware datetime."""
    local = timezone.localtime(now)
    return timezone.make_aware(datetime.combine(local.date(), time.min), local.tzinfo)


def _seconds(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=round(float(value), 1))


def next_utc_midnight(moment: datetime) -> datetime:
    """Return the first UTC midnight at or after moment: where the tally's whole days begin."""
    midnight = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight if midnight == moment else midnight + timedelta(days=1)


def my_work(*, reviewer_id: int, now: datetime | None = None) -> MyWork:
    """Read a reviewer's decisions by window, handling time and open leases."""
    now = now or timezone.now()
    params: dict[str, Any] = {
        "reviewer": reviewer_id,
        "today": start_of_today(now),
        "week": now - WEEK,
        "month": now - MONTH,
    }
    for window in ("today", "week", "month"):
        params[f"{window}_day"] = next_utc_midnight(params[window])
    counts: dict[int, QueueCounts] = {}
    for row in fetch_dicts(mywork_sql.MY_DECISION_COUNTS, params):
        queue = counts.setdefault(row["queue_id"], QueueCounts(row["queue_id"], row["queue_name"]))
        queue.verdicts.append(
            VerdictCounts(
                row["verdict"],
                row["today"],
                row["week"],
                row["month"],
                row["overturned"],
                row["held"],
            )
        )
    names = {q.queue_id: q.name for q in counts.values()}
    handling = [
        HandlingTime(
            queue_id=row["queue_id"],
            name=names.get(row["queue_id"], "") if row["queue_id"] else "All queues",
            week_samples=row["week_samples"],
            week_p50=_seconds(row["week_p50"]),
            week_p90=_seconds(row["week_p90"]),
            month_samples=row["month_samples"],
            month_p50=_seconds(row["month_p50"]),
            month_p90=_seconds(row["month_p90"]),
        )
        for row in fetch_dicts(mywork_sql.MY_HANDLING_TIME, params | {"sample": HANDLING_SAMPLE})
    ]
    # Queues first by name, the all-queues row last (and only when there is more than one queue).
    handling.sort(key=lambda h: (h.queue_id is None, h.name))
    if len(handling) == 2:
        handling = handling[:1]
    if not any(h.month_samples for h in handling):
        handling = []  # ROLLUP answers one empty total row when there is nothing to measure
    leases = list(
        ReviewItem.objects.filter(state=ItemState.LEASED, lease_owner_id=reviewer_id)
        .select_related("queue")
        .only("pk", "subject", "lease_expires", "queue__name", "queue__slug")
        .order_by("lease_expires")
    )
    decided = sum(q.month for q in counts.values())
    return MyWork(
        counts=sorted(counts.values(), key=lambda q: q.name),
        handling=handling,
        leases=leases,
        today_starts=params["today"],
        holds=my_holds(reviewer_id=reviewer_id),
        agreement=my_agreement(reviewer_id=reviewer_id, now=now),
        handling_sample=HANDLING_SAMPLE if decided > HANDLING_SAMPLE else None,
    )


def my_holds(*, reviewer_id: int, limit: int = HOLDS_LIMIT) -> list[MyHold]:
    """The items the reviewer put on hold that are still held, soonest back first."""
    return [
        MyHold(**row)
        for row in fetch_dicts(mywork_sql.MY_HOLDS, {"reviewer": reviewer_id, "limit": limit})
    ]


def my_agreement(*, reviewer_id: int, now: datetime | None = None) -> list[AgreementWindow]:
    """How often blind QA reviews agreed with the reviewer's verdicts: today, 7 and 30 days.

    One read of the QA reviews of their decisions over 30 days (the statement /ops/ reads for
    every reviewer, narrowed to this one), split by when each review was recorded; the
    figures are those of /ops/ (selectors.agreement, Wilson intervals from
    queue_app/second_person.py).
    Empty when there is no QA review of their decisions in the window.
    """
    now = now or timezone.now()
    rows = qa_review_rows(window=MONTH, reviewer_id=reviewer_id)
    if not rows:
        return []
    bounds = [
        ("today", "Today", start_of_today(now)),
        ("week", "Last 7 days", now - WEEK),
        ("month", "Last 30 days", now - MONTH),
    ]
    return [
        AgreementWindow(
            window=name,
            label=label,
            agreement=agreement_of([r for r in rows if r["reviewed_at"] >= since]),
        )
        for name, label, since in bounds
    ]


def search_my_decisions(
    *,
    reviewer_id: int,
    subject: str = "",
    item_id: int | None = None,
    day: date | None = None,
    now: datetime | None = None,
) -> QuerySet[Decision]:
    """Return the reviewer's own decisions matching every criterion given, newest first, bounded."""
    now = now or timezone.now()
    decisions = Decision.objects.filter(reviewer_id=reviewer_id)
    if item_id is not None:
        decisions = decisions.filter(item_id=item_id)
    if day is not None:
        starts = timezone.make_aware(datetime.combine(day, time.min))
        decisions = decisions.filter(created_at__gte=starts, created_at__lt=starts + timedelta(1))
    if subject:
        words = prefix_query(subject)
        if words is None:
            return decisions.none()
        if day is None and item_id is None:
            # Alone, a subject search reads a bounded scope (mywork_sql.MY_SUBJECT_SEARCH).
            found = fetch_dicts(
                mywork_sql.MY_SUBJECT_SEARCH,
                {
                    "reviewer": reviewer_id,
                    "since": now - timedelta(days=SUBJECT_SEARCH_DAYS),
                    "scope": SUBJECT_SEARCH_SCOPE,
                    "words": words,
                    "limit": SEARCH_LIMIT,
                },
            )
            decisions = decisions.filter(pk__in=[row["id"] for row in found])
        else:
            # Within a day or an item, few decisions: the words are matched on each subject.
            decisions = decisions.filter(subject_has_words(subject, "item__subject"))
    return decisions.select_related("item", "queue", "reason_code", "story").order_by(
        "-created_at", "-id"
    )[:SEARCH_LIMIT]


def subject_search_reach(*, reviewer_id: int, now: datetime | None = None) -> datetime | None:
    """How far back a subject search alone looks: the time of the oldest decision of its scope
    when the reviewer made more than SUBJECT_SEARCH_SCOPE in SUBJECT_SEARCH_DAYS, else None
    (it reads the whole window)."""
    now = now or timezone.now()
    rows = fetch_dicts(
        mywork_sql.MY_SEARCH_REACH,
        {
            "reviewer": reviewer_id,
            "since": now - timedelta(days=SUBJECT_SEARCH_DAYS),
            "scope": SUBJECT_SEARCH_SCOPE,
        },
    )
    return rows[0]["created_at"] if len(rows) == 2 else None
