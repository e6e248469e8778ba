"""The QA export: every blind QA review with both verdicts, as JSON lines or CSV.

One row per QA review: the sampled decision (its reviewer, verdict and reason as recorded) and
the QA reviewer's verdict and reason, whether they agree, and how any disagreement was settled
(upheld, or overturned with the overturn decision's id). CSV cells are neutralised against
spreadsheet formulas as in the decision export (queue_app/exports.py).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from queue_app.exports import CHUNK_SIZE, FORMATS, _plain, neutralise_formula
from queue_app.models import LaneKind, LaneOutcome, LaneResult

FIELDS: dict[str, str] = {
    "qa_task_id": "task_id",
    "reviewed_at": "created_at",
    "queue": "task__queue__slug",
    "item_id": "task__item_id",
    "decision_id": "task__decision_id",
    "first_reviewer": "task__decision__reviewer_username",
    "first_verdict": "task__decision__verdict",
    "first_reason": "task__decision__reason_code__code",
    "qa_reviewer": "actor_username",
    "qa_verdict": "verdict",
    "qa_reason": "reason_code__code",
    "agrees_verdict": "agrees_verdict",
    "agrees_reason": "agrees_reason",
    "qa_note": "note",
    "adjudication": "task__adjudication__outcome__result",
    "adjudicated_by": "task__adjudication__outcome__actor_username",
    "overturn_id": "task__adjudication__outcome__overturn_id",
}
COLUMNS = tuple(FIELDS)


def qa_reviews(*, since: datetime | None = None, queue: str | None = None) -> QuerySet:
    """QA reviews recorded since the moment, in the queue (slug); all when unbounded."""
    reviews = LaneOutcome.objects.filter(kind=LaneKind.QA, result=LaneResult.REVIEWED)
    if since is not None:
        reviews = reviews.filter(created_at__gte=since)
    if queue:
        reviews = reviews.filter(task__queue__slug=queue)
    return reviews


def qa_rows(reviews: QuerySet) -> Iterator[dict[str, Any]]:
    rows = reviews.order_by("created_at", "task_id").values_list(*FIELDS.values())
    for row in rows.iterator(chunk_size=CHUNK_SIZE):
        yield {
            name: (value if isinstance(value, bool) else _plain(value))
            for name, value in zip(COLUMNS, row, strict=True)
        }


def qa_export_lines(reviews: QuerySet, *, fmt: str) -> Iterator[str]:
    """Yield the QA export as lines in jsonl or csv."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    if fmt == "jsonl":
        for row in qa_rows(reviews):
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    for row in qa_rows(reviews):
        writer.writerow({k: neutralise_formula(v) for k, v in row.items()})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    tail = buffer.getvalue()
    if tail:
        yield tail
