"""Escalation: an escalate verdict opens a linked item; abandoned items move queues.

Two routes, two links. An escalate decision opens a new item in the escalation queue that
names the decision (ReviewItem.escalated_by_decision, unique) and its origin; no idempotency
key is involved, so nothing a client sends can pre-empt or hijack it. An item abandoned too
often is moved itself (queue changes, intake_queue and its key's scope do not), recorded by
an 'auto_escalated' item event.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from queue_app.evidence import arrival_evidence_hash, attachments_of
from queue_app.models import Decision, ItemEvent, ItemEventKind, Queue, ReviewItem
from queue_app.services._common import guard_timeouts, log_extra, logger
from queue_app.services.intake import store_evidence_hash


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


def carried_from(origin: ReviewItem) -> dict[str, Any]:
    """Return the columns an item opened from origin takes over: its evidence and its clocks."""
    # The evidence is the subject, the payload and the files together: the next reviewer
    # decides on all of it, and the new item's hash attests all of it. The database adds the
    # origin's files to any escalation row that lacks them (reviewitem_handoff_insert).
    files = attachments_of(origin.attachments)
    return {
        "subject": origin.subject,
        "payload": origin.payload,
        "attachments": files,
        "source_hash": origin.source_hash,
        "trace_id": origin.trace_id,
        # The original deadline stands: escalating buys no time.
        "due_at": origin.due_at,
        "subject_key": origin.subject_key,
        "evidence_hash": arrival_evidence_hash(
            subject=origin.subject, payload=origin.payload, attachments=files
        ),
    }


def open_escalation(*, decision: Decision, target: Queue) -> tuple[ReviewItem, bool]:
    """Open the item escalating decision in target, once per decision; return (item, created)."""
    origin = decision.item
    with transaction.atomic():
        try:
            # A savepoint: if this decision already has its item (a replay the applied-row
            # guard did not stop), the unique escalated_by_decision refuses the second one.
            with transaction.atomic():
                item = ReviewItem.objects.create(
                    queue=target,
                    intake_queue=target,
                    idempotency_key=None,
                    priority=origin.priority + 10,
                    escalated_from=origin,
                    escalated_by_decision=decision,
                    **carried_from(origin),
                )
        except IntegrityError:
            existing = ReviewItem.objects.filter(escalated_by_decision=decision).first()
            if existing is None:
                raise
            return existing, False
        if item.evidence_hash is None:
            item.evidence_hash = store_evidence_hash(item_id=item.pk)
        ItemEvent.objects.create(
            item=item,
            kind=ItemEventKind.CREATED,
            detail={"priority": item.priority, "escalated_by_decision_id": decision.pk},
        )
    logger.info(
        "escalation opened",
        extra=log_extra(
            item_id=item.pk, trace_id=item.trace_id, decision_id=decision.pk, queue=target.pk
        ),
    )
    return item, True
