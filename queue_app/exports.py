"""The audit export: every decision as JSON lines or CSV, streamed in constant memory.

Rows come off a server-side cursor in chunks (QuerySet.iterator), are turned into one line of
text each and handed on; nothing holds more than one chunk. The command and the admin action
both call export_lines().
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from queue_app.models import Decision

FORMATS = ("jsonl", "csv")
CHUNK_SIZE = 2000

# Output name -> ORM path, in column order. applied_at is empty while the effect is pending.
FIELDS: dict[str, str] = {
    "decision_id": "id",
    "created_at": "created_at",
    "queue": "queue__slug",
    "item_id": "item_id",
    "item_subject": "item__subject",
    "trace_id": "item__trace_id",
    "reviewer": "reviewer__username",
    "verdict": "verdict",
    "reason_code": "reason_code__code",
    "evidence_hash": "evidence_hash",
    "note": "note",
    "supersedes": "supersedes_id",
    "corrected_verdict": "corrected_verdict",
    "chain_seq": "chain_seq",
    "chain_hash": "chain_hash",
    "applied_at": "applied__applied_at",
}
COLUMNS = tuple(FIELDS)


def decisions_between(
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    queue: str | None = None,
) -> QuerySet[Decision]:
    """Return decisions created in [since, until) in the queue (slug), all when unbounded."""
    decisions = Decision.objects.all()
    if since is not None:
        decisions = decisions.filter(created_at__gte=since)
    if until is not None:
        decisions = decisions.filter(created_at__lt=until)
    if queue:
        decisions = decisions.filter(queue__slug=queue)
    return decisions


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (int, str)):
        return value
    return str(value)  # UUIDs


def export_rows(decisions: QuerySet[Decision]) -> Iterator[dict[str, Any]]:
    """Yield each decision as a dict of COLUMNS, oldest first, from a server-side cursor."""
    rows = decisions.order_by("id").values_list(*FIELDS.values())
    for row in rows.iterator(chunk_size=CHUNK_SIZE):
        yield dict(zip(COLUMNS, map(_plain, row), strict=True))


def export_lines(decisions: QuerySet[Decision], *, fmt: str) -> Iterator[str]:
    """Yield the export as text lines (each ending in a newline) in jsonl or csv."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    if fmt == "jsonl":
        for row in export_rows(decisions):
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")

    def take() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writeheader()
    yield take()
    for row in export_rows(decisions):
        writer.writerow(row)
        yield take()
