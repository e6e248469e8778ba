"""Shared setup for the deadline, hold and subject tests."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from queue_app.models import HoldReason, Queue, ReviewItem
from queue_app.services import create_item

HOLD_CODES = {
    "awaiting_documents": "Awaiting documents",
    "customer_contacted": "Customer contacted",
}


def add_hold_reasons(queue: Queue) -> None:
    for code, label in HOLD_CODES.items():
        HoldReason.objects.create(queue=queue, code=code, label=label)


def item(queue: Queue, key: str, **fields: Any) -> ReviewItem:
    """Create one item through intake (deadline fields and subject_key passed through)."""
    return create_item(
        queue=queue,
        subject=fields.pop("subject", key),
        payload=fields.pop("payload", {"key": key}),
        idempotency_key=key,
        **fields,
    )[0]


def db_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def make_hold_due(item_id: int) -> None:
    """Move a whole hold into the past, as if it had been put on earlier and its time had come.

    Both ends move by the same span, so the hold's length (and the deadline it pushed back) is
    unchanged; now() is fixed within a test's transaction, so "due" means hold_until < now().
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem"
            "   SET held_at = held_at - (hold_until - now()) - interval '1 second',"
            "       hold_until = now() - interval '1 second'"
            " WHERE id = %s AND state = 'held'",
            [item_id],
        )
        assert cursor.rowcount == 1


def soon(hours: float = 1) -> datetime:
    from django.utils import timezone

    return timezone.now() + timedelta(hours=hours)
