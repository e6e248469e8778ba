"""Stored evidence hashes for open items that arrived without one (manage.py
backfill_evidence_hashes).

The decide (decisions_sql.CLOSE_AND_RECORD_DECISION) compares the form's hash with
ReviewItem.evidence_hash and refuses an item without one as changed evidence. Every writer of
evidence now stores it; items that came in before, or whose evidence changed before, have
none. Here each such open item gets the hash of its row as it is stored: the hash the item
page puts in the form.

Nothing is locked while hashing. The write compares the subject, payload and attachments with
the text that was hashed and skips any row that changed in between (or gained a hash, or was
decided); a change after it clears the hash again (the item_evidence_hash_cleared trigger).
Each batch commits on its own, so a run can be stopped and run again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from queue_app.db.statements import evidence as evidence_sql
from queue_app.evidence import row_evidence_hash


@dataclass
class Batch:
    read: int
    stored: int
    last_id: int


def read_unhashed(*, after: int, batch: int) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(evidence_sql.UNHASHED_OPEN_ITEMS, {"after": after, "batch": batch})
        names = [col.name for col in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def store_hashes(rows: list[dict[str, Any]]) -> int:
    """Store each row's hash where the row still holds what was hashed; how many were stored."""
    if not rows:
        return 0
    params = {
        "ids": [row["id"] for row in rows],
        "hashes": [row_evidence_hash(row) for row in rows],
        "subjects": [row["subject"] for row in rows],
        "payloads": [row["payload"] for row in rows],
        "attachments": [row["attachments"] for row in rows],
    }
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(evidence_sql.STORE_EVIDENCE_HASHES, params)
        return cursor.rowcount


def backfill_evidence_hashes(*, batch: int = 500, dry_run: bool = False) -> Iterator[Batch]:
    """Hash the open items without a stored hash, a batch at a time, in id order."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    after = 0
    while rows := read_unhashed(after=after, batch=batch):
        after = rows[-1]["id"]
        stored = 0 if dry_run else store_hashes(rows)
        yield Batch(read=len(rows), stored=stored, last_id=after)
