"""QA agreement figures: how often a blind second review agrees with the first, per queue and
per reviewer, with Cohen's kappa per queue and Wilson 95 % intervals (queue_app/lanes.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from queue_app.lanes import Rate, kappa_from_table
from queue_app.models import LaneKind, LaneOutcome, LaneResult
from queue_app.services._common import database_now

DEFAULT_WINDOW = timedelta(days=30)


@dataclass
class Agreement:
    """Agreement of QA reviews with the decisions they sampled, for one queue or reviewer."""

    verdict: Rate
    reason: Rate
    kappa: float | None = None
    # {(first verdict, QA verdict): count}: the contingency table kappa is computed from.
    table: dict[tuple[str, str], int] = field(default_factory=dict)


def _rows(*, window: timedelta, queue_id: int | None = None) -> list[dict[str, Any]]:
    since = database_now() - window
    qs = LaneOutcome.objects.filter(
        kind=LaneKind.QA, result=LaneResult.REVIEWED, created_at__gte=since
    )
    if queue_id is not None:
        qs = qs.filter(task__queue_id=queue_id)
    return list(
        qs.values(
            "task__queue_id",
            "task__queue__name",
            "task__decision__reviewer_id",
            "task__decision__reviewer_username",
            "task__decision__verdict",
            "verdict",
            "agrees_verdict",
            "agrees_reason",
        )
    )


def _agreement(rows: list[dict[str, Any]], *, with_kappa: bool) -> Agreement:
    table: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r["task__decision__verdict"], r["verdict"])
        table[key] = table.get(key, 0) + 1
    return Agreement(
        verdict=Rate(sum(1 for r in rows if r["agrees_verdict"]), len(rows)),
        reason=Rate(sum(1 for r in rows if r["agrees_reason"]), len(rows)),
        kappa=kappa_from_table(table) if with_kappa else None,
        table=table,
    )


def agreement_by_queue(*, window: timedelta = DEFAULT_WINDOW) -> list[dict[str, Any]]:
    """Per queue with QA reviews in the window: name, agreement, kappa, intervals."""
    rows = _rows(window=window)
    by_queue: dict[int, list[dict[str, Any]]] = {}
    names: dict[int, str] = {}
    for r in rows:
        by_queue.setdefault(r["task__queue_id"], []).append(r)
        names[r["task__queue_id"]] = r["task__queue__name"]
    return [
        {"queue_id": qid, "queue": names[qid], "agreement": _agreement(rs, with_kappa=True)}
        for qid, rs in sorted(by_queue.items(), key=lambda kv: names[kv[0]])
    ]


def agreement_by_reviewer(
    *, queue_id: int | None = None, window: timedelta = DEFAULT_WINDOW
) -> list[dict[str, Any]]:
    """Per original reviewer: how often QA agreed with their decisions (with the interval)."""
    rows = _rows(window=window, queue_id=queue_id)
    by_reviewer: dict[int, list[dict[str, Any]]] = {}
    names: dict[int, str] = {}
    for r in rows:
        by_reviewer.setdefault(r["task__decision__reviewer_id"], []).append(r)
        names[r["task__decision__reviewer_id"]] = r["task__decision__reviewer_username"] or str(
            r["task__decision__reviewer_id"]
        )
    return [
        {"reviewer": names[rid], "agreement": _agreement(rs, with_kappa=False)}
        for rid, rs in sorted(by_reviewer.items(), key=lambda kv: names[kv[0]])
    ]
