"""Escalation: an escalate verdict opens a linked item; abandoned items move queues.

Two routes, two links. An escalate decision opens a new item in the escalation queue that
names the decision (ReviewItem.escalated_by_decision, unique) and its origin; no idempotency
key is involved, so nothing a client sends can pre-empt or hijack it. An item abandoned too
often is moved itself (queue changes, intake_queue and its key's scope do not), recorded by
an 'auto_escalated' item event.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from queue_app.evidence import arrival_evidence_hash
from queue_app.models import Decision, ItemEvent, ItemEventKind, Queue, ReviewItem
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
                    subject=origin.subject,
                    payload=origin.payload,
                    idempotency_key=None,
                    source_hash=origin.source_hash,
                    priority=origin.priority + 10,
                    trace_id=origin.trace_id,
                    escalated_from=origin,
                    escalated_by_decision=decision,
                    # The original deadline stands (issue 15): escalating buys no time.
                    due_at=origin.due_at,
                    subject_key=origin.subject_key,
                    evidence_hash=arrival_evidence_hash(
                        subject=origin.subject, payload=origin.payload
                    ),
                )
        except IntegrityError:
            existing = ReviewItem.objects.filter(escalated_by_decision=decision).first()
            if existing is None:
                raise
            return existing, False
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
