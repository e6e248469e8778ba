"""QA agreement figures: how often a blind second review agrees with the first, per queue and
per reviewer, with Cohen's kappa per queue and Wilson 95 % intervals (second_person.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import lanes as lanes_sql
from queue_app.second_person import Rate, kappa_from_table

DEFAULT_WINDOW = timedelta(days=30)


@dataclass
class Agreement:
    """Agreement of QA reviews with the decisions they sampled, for one queue or reviewer."""

    verdict: Rate
    reason: Rate
    kappa: float | None = None
    # {(first verdict, QA verdict): count}: the contingency table kappa is computed from.
    table: dict[tuple[str, str], int] = field(default_factory=dict)


def qa_review_rows(
    *,
    window: timedelta = DEFAULT_WINDOW,
    queue_id: int | None = None,
    reviewer_id: int | None = None,
    using: str = "default",
) -> list[dict[str, Any]]:
    """Every QA review in the window with its sampled decision (one statement); only those of
    one original reviewer's decisions when reviewer_id is given."""
    return fetch_dicts(
        lanes_sql.QA_REVIEWS_IN_WINDOW,
        {"window": window, "queue_id": queue_id, "reviewer_id": reviewer_id},
        using=using,
    )


def _agreement(rows: list[dict[str, Any]], *, with_kappa: bool) -> Agreement:
    table: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r["first_verdict"], r["qa_verdict"])
        table[key] = table.get(key, 0) + 1
    return Agreement(
        verdict=Rate(sum(1 for r in rows if r["agrees_verdict"]), len(rows)),
        reason=Rate(sum(1 for r in rows if r["agrees_reason"]), len(rows)),
        kappa=kappa_from_table(table) if with_kappa else None,
        table=table,
    )


def agreement_of(rows: list[dict[str, Any]]) -> Agreement:
    """Verdict and reason agreement over any set of QA review rows (no kappa: see
    agreement_by_queue for it)."""
    return _agreement(rows, with_kappa=False)


def agreement_by_queue(
    *, window: timedelta = DEFAULT_WINDOW, rows: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Per queue with QA reviews in the window: name, slug, agreement with kappa."""
    rows = qa_review_rows(window=window) if rows is None else rows
    groups: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["queue_id"], []).append(r)
    return [
        {
            "queue_id": qid,
            "queue": rs[0]["queue_name"],
            "slug": rs[0]["slug"],
            "agreement": _agreement(rs, with_kappa=True),
        }
        for qid, rs in sorted(groups.items(), key=lambda kv: kv[1][0]["queue_name"])
    ]


def agreement_by_reviewer(
    *,
    queue_id: int | None = None,
    window: timedelta = DEFAULT_WINDOW,
    rows: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Per original reviewer: how often QA agreed with their decisions (with the interval)."""
    rows = qa_review_rows(window=window, queue_id=queue_id) if rows is None else rows
    groups: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["reviewer_id"], []).append(r)
    return [
        {"reviewer": rs[0]["reviewer_username"], "agreement": _agreement(rs, with_kappa=False)}
        for _, rs in sorted(groups.items(), key=lambda kv: kv[1][0]["reviewer_username"])
    ]
