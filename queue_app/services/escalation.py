"""Abandonment: items leased too often without a decision move to their escalation queue."""

from __future__ import annotations

from django.db import transaction

from queue_app.models import ReviewItem
from queue_app.services._common import guard_timeouts, log_extra, logger


def escalate_abandoned(*, limit: int = 500) -> int:
    """Move items abandoned escalation_threshold times to their escalation queue; return count."""
    with transaction.atomic():
        guard_timeouts()
        moved = ReviewItem.objects.escalate_abandoned(limit=limit)
    for row in moved:
        logger.warning(
            "item auto-escalated",
            extra=log_extra(
                item_id=row["id"],
                trace_id=row["trace_id"],
                queue=row["from_queue_id"],
                to_queue=row["to_queue_id"],
                lease_count=row["lease_count"],
            ),
        )
    return len(moved)
