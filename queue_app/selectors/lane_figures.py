"""Read the second-person lanes' figures for /ops/, /metrics and doctor: backlogs, ages, return
rate, agreement.

Read once per page or scrape (read_lane_figures): the open tasks per queue and lane (one pass
over lanetask_open_due_claim), the checks finished in the window (confirmed, returned), and the QA
agreement per queue and per reviewer (selectors.agreement).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import lanes as lanes_sql
from queue_app.models import LaneKind
from queue_app.second_person import Rate
from queue_app.selectors.agreement import (
    Agreement,
    agreement_by_queue,
    agreement_by_reviewer,
    qa_review_rows,
)
from queue_app.services.lanes import LANE_NAMES
from reviewconsole.routers import read_alias

WINDOW = timedelta(days=30)


@dataclass
class LaneBacklog:
    queue: str
    slug: str
    kind: str
    name: str
    open: int
    leased: int
    oldest: datetime | None
    oldest_age: timedelta | None
    return_rate: str = ""  # checks only: "12% of 50" finished in the window


@dataclass
class LaneFigures:
    window: timedelta
    backlog: list[LaneBacklog]
    # Per queue slug: the return rate of checks finished in the window.
    returns: dict[str, Rate]
    agreement: list[dict[str, Any]]
    by_reviewer: list[dict[str, Any]] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.backlog or self.returns or self.agreement)


def read_lane_figures(*, window: timedelta = WINDOW) -> LaneFigures:
    """Everything the lanes panel, the metrics and doctor's LANE_BACKLOG read: 3 statements,
    on the replica inside replica_reads() (/ops/ and /metrics), as their other figures are."""
    using = read_alias()
    backlog = [
        LaneBacklog(
            queue=r["name"],
            slug=r["slug"],
            kind=r["kind"],
            name=LANE_NAMES[LaneKind(r["kind"])],
            open=r["open"],
            leased=r["leased"],
            oldest=r["oldest"],
            oldest_age=r["now"] - r["oldest"],
        )
        for r in fetch_dicts(lanes_sql.LANE_BACKLOG_NAMED, {}, using=using)
    ]
    returns = {
        r["slug"]: Rate(r["returned"], r["total"])
        for r in fetch_dicts(lanes_sql.CHECKS_FINISHED, {"window": window}, using=using)
    }
    for b in backlog:
        rate = returns.get(b.slug)
        if b.kind == LaneKind.CHECK:
            b.return_rate = f"{percent(rate)} of {rate.n}" if rate is not None else "none"
    rows = qa_review_rows(window=window, using=using)
    return LaneFigures(
        window=window,
        backlog=backlog,
        returns=returns,
        agreement=agreement_by_queue(rows=rows),
        by_reviewer=agreement_by_reviewer(rows=rows),
    )


def percent(rate: Rate) -> str:
    return "—" if rate.value is None else f"{rate.value:.0%}"


def interval_text(rate: Rate) -> str:
    interval = rate.interval
    if interval is None:
        return ""
    return f"{interval[0]:.0%} to {interval[1]:.0%}"


def agreement_rows(figures: LaneFigures) -> list[dict[str, Any]]:
    """The agreement panel's rows, formatted."""
    rows = []
    for row in figures.agreement:
        a: Agreement = row["agreement"]
        rows.append(
            {
                "queue": row["queue"],
                "n": a.verdict.n,
                "verdict": percent(a.verdict),
                "verdict_ci": interval_text(a.verdict),
                "reason": percent(a.reason),
                "reason_ci": interval_text(a.reason),
                "kappa": "—" if a.kappa is None else f"{a.kappa:.2f}",
                "disagreements": a.verdict.n - a.verdict.hits,
            }
        )
    return rows


def reviewer_rows(figures: LaneFigures) -> list[dict[str, Any]]:
    return [
        {
            "reviewer": row["reviewer"],
            "n": row["agreement"].verdict.n,
            "verdict": percent(row["agreement"].verdict),
            "verdict_ci": interval_text(row["agreement"].verdict),
        }
        for row in figures.by_reviewer
    ]
