"""Read the operator figures for every queue in a fixed handful of aggregate statements.

/ops/ and /metrics both render an OpsSnapshot; doctor reads some of the same statements.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import ops as ops_sql
from queue_app.models import Queue
from reviewconsole.routers import read_alias

# Decision-based figures look back this far: long enough to smooth a quiet queue, short
# enough that the statements read a day of decisions, not the whole log.
WINDOW_HOURS = 24
# Lease counts at or above this share the last histogram bucket.
TOP_LEASE_BUCKET = 5
# Fewer handling times than this and a p99 is an anecdote: no TTL is suggested.
MIN_SAMPLES_FOR_TTL = 20
# Headroom above the observed p99 for the suggested lease TTL.
TTL_HEADROOM = 1.25
DEAD_JOBS_SHOWN = 50
# Items held back by a dead job, listed on /ops/ and by doctor BLOCKED_EFFECTS.
BLOCKED_SHOWN = 50
# Leased at or above this share of max_in_flight looks like leases leaking (doctor LEASE_LEAK).
LEASE_LEAK_RATIO = 0.9


@dataclass
class ReasonShare:
    code: str
    label: str
    decisions: int
    share: float


@dataclass
class QueueFigures:
    """Everything operators see about one queue."""

    id: int
    slug: str
    name: str
    lease_ttl: timedelta
    max_in_flight: int
    escalation_threshold: int
    pending: int = 0
    leased: int = 0
    expired_leases: int = 0
    oldest_pending_age: timedelta | None = None
    # Open items (pending or leased) by lease_count: 0, 1, ... TOP_LEASE_BUCKET (and above).
    lease_histogram: list[int] = field(default_factory=lambda: [0] * (TOP_LEASE_BUCKET + 1))
    # Reviewer verdicts (approve, reject, escalate) per hour; overturns are counted apart.
    decisions_per_hour: list[tuple[datetime, int]] = field(default_factory=list)
    overturns_last_window: int = 0
    ttd_samples: int = 0
    ttd_p50: timedelta | None = None
    ttd_p90: timedelta | None = None
    ttd_p99: timedelta | None = None
    reason_shares: dict[str, list[ReasonShare]] = field(default_factory=dict)
    unapplied: int = 0
    unapplied_overdue: int = 0
    oldest_unapplied_age: timedelta | None = None
    dead_jobs: int = 0
    # Live effect jobs waiting behind a dead job of their item (they cannot run until it does).
    blocked_jobs: int = 0

    @property
    def histogram_labels(self) -> list[str]:
        return [str(n) for n in range(TOP_LEASE_BUCKET)] + [f"{TOP_LEASE_BUCKET}+"]

    @property
    def decisions_last_window(self) -> int:
        return sum(count for _, count in self.decisions_per_hour)

    @property
    def decisions_last_hour(self) -> int:
        return self.decisions_per_hour[-1][1] if self.decisions_per_hour else 0

    @property
    def in_flight_ratio(self) -> float:
        return self.leased / self.max_in_flight if self.max_in_flight else 0.0

    @property
    def suggested_lease_ttl(self) -> timedelta | None:
        return suggest_lease_ttl(p99=self.ttd_p99, samples=self.ttd_samples)


@dataclass
class DeadJob:
    decision_id: int
    queue: str
    item_id: int
    verdict: str
    attempts: int
    last_error: str
    decided_at: datetime


@dataclass
class BlockedItem:
    """An item whose later effects wait behind a dead job (effects run in decision order)."""

    item_id: int
    queue: str
    dead_decision_id: int
    verdict: str
    attempts: int
    last_error: str
    waiting_decision_ids: list[int]
    waiting_for: timedelta | None


@dataclass
class OpsSnapshot:
    queues: list[QueueFigures]
    dead_jobs: list[DeadJob]
    unapplied_alert_after: timedelta
    blocked: list[BlockedItem] = field(default_factory=list)
    window_hours: int = WINDOW_HOURS

    @property
    def unapplied_overdue(self) -> int:
        return sum(q.unapplied_overdue for q in self.queues)


def suggest_lease_ttl(*, p99: timedelta | None, samples: int) -> timedelta | None:
    """Return p99 handling time x 1.25, rounded up to the next whole minute (None if too few)."""
    if p99 is None or samples < MIN_SAMPLES_FOR_TTL:
        return None
    minutes = math.ceil(p99.total_seconds() * TTL_HEADROOM / 60)
    return timedelta(minutes=max(minutes, 1))


def unapplied_alert_after() -> timedelta:
    """Return how old an unapplied decision may get before operators are alarmed."""
    return timedelta(minutes=settings.UNAPPLIED_ALERT_MINUTES)


def _seconds(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=float(value))


def _read_open_work() -> dict[int, QueueFigures]:
    queues = {
        q.id: QueueFigures(
            id=q.id,
            slug=q.slug,
            name=q.name,
            lease_ttl=q.lease_ttl,
            max_in_flight=q.max_in_flight,
            escalation_threshold=q.escalation_threshold,
        )
        for q in Queue.objects.order_by("slug")
    }
    for row in fetch_dicts(ops_sql.OPEN_WORK, {"top_bucket": TOP_LEASE_BUCKET}, using=read_alias()):
        figures = queues.get(row["queue_id"])
        if figures is None:  # a queue created after the list above was read
            continue
        figures.pending += row["pending"]
        figures.leased += row["leased"]
        figures.expired_leases += row["expired"]
        figures.lease_histogram[row["bucket"]] += row["pending"] + row["leased"]
        age = _seconds(row["oldest_pending_seconds"])
        if age is not None and (
            figures.oldest_pending_age is None or age > figures.oldest_pending_age
        ):
            figures.oldest_pending_age = age
    return queues


def read_open_work() -> list[QueueFigures]:
    """Read only the open-work figures (counts, oldest pending, histogram): two statements."""
    return list(_read_open_work().values())


def read_snapshot(*, window_hours: int = WINDOW_HOURS, blocked: bool = True) -> OpsSnapshot:
    """Read every operator figure for every queue (eight statements, whatever the sizes).

    blocked=False leaves out the list of items held back by a dead job (/metrics counts them,
    per queue, as effect_jobs_blocked; doctor BLOCKED_EFFECTS and /ops/ name them): seven
    statements.
    """
    alert_after = unapplied_alert_after()
    queues = _read_open_work()

    hourly: dict[int, list[tuple[datetime, int]]] = defaultdict(list)
    overturns: dict[int, int] = defaultdict(int)
    for row in fetch_dicts(ops_sql.DECISIONS_PER_HOUR, {"hours": window_hours}, using=read_alias()):
        hourly[row["queue_id"]].append((row["hour"], row["decisions"]))
        overturns[row["queue_id"]] += row["overturns"]
    for queue_id, series in hourly.items():
        if queue_id in queues:
            queues[queue_id].decisions_per_hour = series
            queues[queue_id].overturns_last_window = overturns[queue_id]

    for row in fetch_dicts(ops_sql.TIME_TO_DECISION, {"hours": window_hours}, using=read_alias()):
        if (figures := queues.get(row["queue_id"])) is not None:
            figures.ttd_samples = row["samples"]
            figures.ttd_p50 = _seconds(row["p50"])
            figures.ttd_p90 = _seconds(row["p90"])
            figures.ttd_p99 = _seconds(row["p99"])

    for row in fetch_dicts(ops_sql.REASON_SHARES, {"hours": window_hours}, using=read_alias()):
        if (figures := queues.get(row["queue_id"])) is not None:
            figures.reason_shares.setdefault(row["verdict"], []).append(
                ReasonShare(
                    code=row["code"],
                    label=row["label"],
                    decisions=row["decisions"],
                    share=row["share"],
                )
            )

    for row in fetch_dicts(ops_sql.APPLY_STATE, {"overdue_after": alert_after}, using=read_alias()):
        if (figures := queues.get(row["queue_id"])) is not None:
            figures.unapplied = row["unapplied"]
            figures.unapplied_overdue = row["overdue"]
            figures.oldest_unapplied_age = _seconds(row["oldest_age_seconds"])
            figures.dead_jobs = row["dead"]
            figures.blocked_jobs = row["blocked"]

    dead = [
        DeadJob(
            decision_id=row["decision_id"],
            queue=row["queue"],
            item_id=row["item_id"],
            verdict=row["verdict"],
            attempts=row["attempts"],
            last_error=row["last_error"],
            decided_at=row["decided_at"],
        )
        for row in fetch_dicts(ops_sql.DEAD_JOBS, {"limit": DEAD_JOBS_SHOWN}, using=read_alias())
    ]
    blocked_items = [
        BlockedItem(
            item_id=row["item_id"],
            queue=row["queue"],
            dead_decision_id=row["dead_decision_id"],
            verdict=row["verdict"],
            attempts=row["attempts"],
            last_error=row["last_error"],
            waiting_decision_ids=list(row["waiting_decision_ids"]),
            waiting_for=_seconds(row["waiting_seconds"]),
        )
        for row in (
            fetch_dicts(ops_sql.BLOCKED_EFFECTS, {"limit": BLOCKED_SHOWN}, using=read_alias())
            if blocked
            else []
        )
    ]
    return OpsSnapshot(
        queues=list(queues.values()),
        dead_jobs=dead,
        unapplied_alert_after=alert_after,
        blocked=blocked_items,
    )
