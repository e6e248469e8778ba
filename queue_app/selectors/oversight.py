"""Oversight of machine suggestions: do the people who see a suggestion still judge for themselves?

Read for /ops/, /metrics and the oversight export from review decisions (never overturns) of
items that carried a suggestion, made in the last WINDOW (90 days by the decision's created_at:
long enough for a band to gather a sample, short enough to show a change of model or of habit).
Two statements whatever the number of queues (db/statements/oversight.py); everything else is
arithmetic on their rows here. Proportions carry Wilson 95 % intervals (second_person.Rate).

- calibration: per confidence band of the suggestion, people's decisions (never 'automatic'):
  how often they agreed with it, and its complement, the override rate;
- automation bias: the follow rate when the suggestion was on the page before the choice
  ('shown', 'revealed_before_choice') against when it was not ('not_shown',
  'revealed_after_choice'); a positive gap means people follow the machine because they saw it;
- automatic decisions' agreement with blind QA;
- each reviewer's follow rate beside the team's (the queue's people, all of them).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import oversight as oversight_sql
from queue_app.exports import neutralise_formula
from queue_app.models import SuggestionView
from queue_app.second_person import Rate
from reviewconsole.routers import read_alias

WINDOW = timedelta(days=90)

# The confidence bands of the calibration table: each band's lower bound (inclusive); a band
# ends where the next begins, the last at 1 (inclusive). Finer near the top, where suggestions
# cluster and where an automatic threshold would sit.
BAND_FLOORS: tuple[Decimal, ...] = (
    Decimal("0"),
    Decimal("0.5"),
    Decimal("0.7"),
    Decimal("0.8"),
    Decimal("0.9"),
    Decimal("0.95"),
)

# What the maker saw, in the two groups the automation-bias indicator compares.
SEEN_BEFORE_CHOICE = (SuggestionView.SHOWN.value, SuggestionView.REVEALED_BEFORE_CHOICE.value)
NOT_SEEN_BEFORE_CHOICE = (
    SuggestionView.NOT_SHOWN.value,
    SuggestionView.REVEALED_AFTER_CHOICE.value,
)

# The key of the figures over every queue at once (never a queue's slug: slugs are [-a-z0-9]).
ALL_QUEUES = "*"


def band_label(index: int) -> str:
    """Name band index as a range: "0.50-0.70", the last "0.95-1.00" (1 included)."""
    low = BAND_FLOORS[index]
    high = BAND_FLOORS[index + 1] if index + 1 < len(BAND_FLOORS) else Decimal(1)
    return f"{low:.2f}-{high:.2f}"


@dataclass(frozen=True)
class Band:
    """One row of the calibration table: people's decisions on suggestions in one band."""

    label: str
    followed: Rate

    @property
    def overridden(self) -> Rate:
        return Rate(self.followed.n - self.followed.hits, self.followed.n)


@dataclass(frozen=True)
class Bias:
    """Follow rate with the suggestion seen before the choice against without."""

    seen: Rate
    unseen: Rate

    @property
    def gap(self) -> float | None:
        """Seen minus unseen follow rate; None unless both have a sample."""
        if self.seen.value is None or self.unseen.value is None:
            return None
        return self.seen.value - self.unseen.value

    @property
    def gap_interval(self) -> tuple[float, float] | None:
        """Newcombe's 95 % interval for the gap, from the two Wilson intervals (his method 10):
        honest for small samples as they are; an interval above 0 is a gap chance hardly makes."""
        if self.seen.interval is None or self.unseen.interval is None:
            return None
        p1, p2 = self.seen.value or 0.0, self.unseen.value or 0.0
        (l1, u1), (l2, u2) = self.seen.interval, self.unseen.interval
        gap = p1 - p2
        return (
            gap - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
            gap + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2),
        )


@dataclass
class ReviewerFollowing:
    reviewer_id: int
    reviewer: str
    followed: Rate


@dataclass
class QueueOversight:
    """The oversight figures of one queue, or of every queue (slug ALL_QUEUES)."""

    slug: str
    name: str
    calibration: list[Band]
    bias: Bias
    # Automatic decisions in the window, and QA agreement with those a QA review finished.
    automatic: int
    automatic_qa: Rate
    team: Rate  # people's follow rate, every band and view
    reviewers: list[ReviewerFollowing] = field(default_factory=list)


@dataclass
class OversightFigures:
    window: timedelta
    queues: list[QueueOversight]
    all: QueueOversight

    @property
    def any(self) -> bool:
        return bool(self.queues)


def _fold(
    slug: str, name: str, rows: list[dict[str, Any]], automatic_rows: list[dict[str, Any]]
) -> QueueOversight:
    people = [r for r in rows if r["suggestion_view"] != SuggestionView.AUTOMATIC]

    def rate(selected: list[dict[str, Any]]) -> Rate:
        return Rate(sum(r["followed"] for r in selected), sum(r["decisions"] for r in selected))

    reviewers: dict[int, list[dict[str, Any]]] = {}
    for r in people:
        reviewers.setdefault(r["reviewer_id"], []).append(r)
    return QueueOversight(
        slug=slug,
        name=name,
        calibration=[
            Band(band_label(index), rate([r for r in people if r["band"] == index]))
            for index in range(len(BAND_FLOORS))
        ],
        bias=Bias(
            seen=rate([r for r in people if r["suggestion_view"] in SEEN_BEFORE_CHOICE]),
            unseen=rate([r for r in people if r["suggestion_view"] in NOT_SEEN_BEFORE_CHOICE]),
        ),
        automatic=sum(r["automatic"] for r in automatic_rows),
        automatic_qa=Rate(
            sum(r["qa_agreed"] for r in automatic_rows),
            sum(r["qa_reviewed"] for r in automatic_rows),
        ),
        team=rate(people),
        reviewers=sorted(
            (
                ReviewerFollowing(rid, rs[0]["reviewer_username"], rate(rs))
                for rid, rs in reviewers.items()
            ),
            key=lambda f: (f.reviewer, f.reviewer_id),
        ),
    )


def read_oversight(*, window: timedelta = WINDOW) -> OversightFigures:
    """Every oversight figure, per queue and over all queues: 2 statements, on the replica
    inside replica_reads() (/ops/ and /metrics), as the other figures there are."""
    using = read_alias()
    # width_bucket's thresholds: every floor but the first (0, below which nothing falls), so
    # a confidence in band k of BAND_FLOORS comes back as k.
    params = {"window": window, "band_floors": list(BAND_FLOORS[1:])}
    rows = fetch_dicts(oversight_sql.SUGGESTION_FOLLOWING, params, using=using)
    automatic = fetch_dicts(oversight_sql.AUTOMATIC_DECISIONS_QA, {"window": window}, using=using)
    names: dict[str, str] = {}
    by_queue: dict[str, list[dict[str, Any]]] = {}
    automatic_by_queue: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        names[r["slug"]] = r["queue_name"]
        by_queue.setdefault(r["slug"], []).append(r)
    for r in automatic:
        names[r["slug"]] = r["queue_name"]
        automatic_by_queue.setdefault(r["slug"], []).append(r)
    queues = [
        _fold(slug, name, by_queue.get(slug, []), automatic_by_queue.get(slug, []))
        for slug, name in sorted(names.items(), key=lambda kv: (kv[1], kv[0]))
    ]
    return OversightFigures(
        window=window,
        queues=queues,
        all=_fold(ALL_QUEUES, "All queues", rows, automatic),
    )


# -- export ---------------------------------------------------------------------------------------

EXPORT_COLUMNS = ("queue", "figure", "group", "n", "hits", "rate", "low", "high")


def _row(queue: str, figure: str, group: str, rate: Rate) -> dict[str, Any]:
    interval = rate.interval
    return {
        "queue": queue,
        "figure": figure,
        "group": group,
        "n": rate.n,
        "hits": rate.hits,
        "rate": rate.value,
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
    }


def export_rows(figures: OversightFigures) -> list[dict[str, Any]]:
    """The figures as flat rows (EXPORT_COLUMNS), every queue then all queues ("*"): one row per
    calibration band (followed and overridden), bias group and gap, QA agreement, reviewer."""
    out: list[dict[str, Any]] = []
    for q in [*figures.queues, figures.all]:
        for band in q.calibration:
            out.append(_row(q.slug, "followed", band.label, band.followed))
            out.append(_row(q.slug, "overridden", band.label, band.overridden))
        out.append(_row(q.slug, "bias_followed", "seen_before_choice", q.bias.seen))
        out.append(_row(q.slug, "bias_followed", "not_seen_before_choice", q.bias.unseen))
        gap_interval = q.bias.gap_interval
        out.append(
            {
                "queue": q.slug,
                "figure": "bias_gap",
                "group": "seen_minus_not_seen",
                "n": q.bias.seen.n + q.bias.unseen.n,
                "hits": None,
                "rate": q.bias.gap,
                "low": gap_interval[0] if gap_interval else None,
                "high": gap_interval[1] if gap_interval else None,
            }
        )
        out.append(
            {"queue": q.slug, "figure": "automatic_decisions", "group": "", "n": q.automatic}
            | dict.fromkeys(("hits", "rate", "low", "high"))
        )
        out.append(_row(q.slug, "automatic_qa_agreement", "qa_reviewed", q.automatic_qa))
        out.append(_row(q.slug, "team_followed", "people", q.team))
        for r in q.reviewers:
            out.append(_row(q.slug, "reviewer_followed", r.reviewer, r.followed))
    return out


def export_csv(figures: OversightFigures) -> str:
    """The flat rows as CSV text, rates as decimals to 4 places (text cells neutralised, as
    every export: a reviewer's name is upstream text)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS)
    writer.writeheader()
    for row in export_rows(figures):
        writer.writerow(
            {
                key: f"{value:.4f}"
                if isinstance(value, float)
                else ("" if value is None else neutralise_formula(value))
                for key, value in row.items()
            }
        )
    return buffer.getvalue()


def _rate_json(rate: Rate) -> dict[str, Any]:
    interval = rate.interval
    return {
        "n": rate.n,
        "hits": rate.hits,
        "rate": rate.value,
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
    }


def _queue_json(q: QueueOversight) -> dict[str, Any]:
    gap_interval = q.bias.gap_interval
    return {
        "queue": q.slug,
        "name": q.name,
        "calibration": [
            {
                "band": b.label,
                "followed": _rate_json(b.followed),
                "overridden": _rate_json(b.overridden),
            }
            for b in q.calibration
        ],
        "bias": {
            "seen_before_choice": _rate_json(q.bias.seen),
            "not_seen_before_choice": _rate_json(q.bias.unseen),
            "gap": q.bias.gap,
            "gap_low": gap_interval[0] if gap_interval else None,
            "gap_high": gap_interval[1] if gap_interval else None,
        },
        "automatic": {"decisions": q.automatic, "qa_agreement": _rate_json(q.automatic_qa)},
        "team_followed": _rate_json(q.team),
        "reviewers": [
            {"reviewer": r.reviewer, "followed": _rate_json(r.followed)} for r in q.reviewers
        ],
    }


def export_json(figures: OversightFigures) -> dict[str, Any]:
    """The figures as one JSON document: the window, each queue's and all queues' figures."""
    return {
        "window_days": figures.window.days,
        "bands": [band_label(i) for i in range(len(BAND_FLOORS))],
        "queues": [_queue_json(q) for q in figures.queues],
        "all": _queue_json(figures.all),
    }
