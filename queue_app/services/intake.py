"""Items arriving from upstream: created once per idempotency key, evidence replaced while open."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from queue_app.errors import AlreadyDecided, IdempotencyConflict, InvalidSuggestion, ItemNotFound
from queue_app.evidence import arrival_evidence_hash, item_evidence_hash
from queue_app.models import ApiClient, ItemEvent, ItemEventKind, ItemState, Queue, ReviewItem
from queue_app.services._common import (
    User,
    database_now,
    guard_timeouts,
    log_extra,
    logger,
    signed_in_id,
)
from queue_app.services.access import require_may_send_evidence
from queue_app.services.automation import decide_automatically
from queue_app.services.deadlines import initial_due_at
from queue_app.services.holds import resume_hold
from queue_app.services.suggestions import clean_suggestion


def create_item(
    *,
    queue: Queue,
    subject: str,
    payload: Any,
    idempotency_key: str,
    source_hash: str = "",
    priority: int = 0,
    trace_id: uuid.UUID | None = None,
    client: ApiClient | None = None,
    due_at: datetime | None = None,
    sla_seconds: int | None = None,
    subject_key: str | None = None,
    suggestion: Any = None,
) -> tuple[ReviewItem, bool]:
    """Create an item once per (queue, client, idempotency key); return (item, created).

    A key is scoped to the client that sent it (None: the console, seeding and commands share
    one scope) and to the queue it was sent to, so two clients never see each other's keys.
    Replaying a key with the same source hash returns the existing item; a different source
    hash is an IdempotencyConflict, which names the item only if the caller can still see it.
    The deadline is due_at, else receipt + sla_seconds, else the queue's default SLA
    (services.deadlines.initial_due_at; InvalidDeadline for bad input, before anything is written).
    suggestion: the machine's suggested decision (services.suggestions.clean_suggestion;
    InvalidSuggestion naming the field, before anything is written), evidence like the payload.
    An item with a suggestion may be decided by the machine in the same transaction
    (services.automation.decide_automatically); it is then returned decided or awaiting a check.
    """
    deadline = initial_due_at(
        queue=queue, received_at=timezone.now(), due_at=due_at, sla_seconds=sla_seconds
    )
    with transaction.atomic():
        if client is not None:
            require_may_send_evidence(user_id=client.user_id, queue_id=queue.pk)
        try:
            suggestion = clean_suggestion(queue=queue, suggestion=suggestion)
        except InvalidSuggestion:
            # A replay answers as before, even once the suggestion's reason has been retired.
            replay = _existing(queue=queue, client=client, idempotency_key=idempotency_key)
            if replay is None:
                raise
            return _replayed(replay, client=client, source_hash=source_hash), False
        try:
            # A savepoint: a concurrent insert of the same key loses the unique race here and
            # falls through to read the winner's row, inside the caller's transaction.
            with transaction.atomic():
                item = ReviewItem.objects.create(
                    queue=queue,
                    intake_queue=queue,
                    created_by_client=client,
                    subject=subject,
                    payload=payload,
                    idempotency_key=idempotency_key,
                    source_hash=source_hash,
                    priority=priority,
                    trace_id=trace_id or uuid.uuid4(),
                    due_at=deadline,
                    subject_key=subject_key or None,
                    suggestion=suggestion,
                    evidence_hash=arrival_evidence_hash(
                        subject=subject, payload=payload, suggestion=suggestion
                    ),
                )
        except IntegrityError:
            existing = _existing(queue=queue, client=client, idempotency_key=idempotency_key)
            if existing is None:
                raise
            return _replayed(existing, client=client, source_hash=source_hash), False
        if item.evidence_hash is None:
            item.evidence_hash = store_evidence_hash(item_id=item.pk)
        ItemEvent.objects.create(
            item=item,
            kind=ItemEventKind.CREATED,
            detail={"priority": priority, "due_at": deadline.isoformat() if deadline else None},
        )
        decide_automatically(item=item, queue=queue)
    return item, True


def _existing(*, queue: Queue, client: ApiClient | None, idempotency_key: str) -> ReviewItem | None:
    """The item this client's key already names in this queue, if any."""
    return (
        ReviewItem.objects.select_related("queue")
        .filter(idempotency_key=idempotency_key, intake_queue=queue, created_by_client=client)
        .first()
    )


def store_evidence_hash(*, item_id: int, known: str | None = None) -> str:
    """Store the hash of the item's evidence as its row holds it now, in the caller's
    transaction; return it. known: that hash, when the caller has just read the row.

    The decide compares the form's hash with the stored one and nothing else, so every write
    of evidence ends here unless the hash of what it wrote is known to be the hash of what is
    stored (evidence.arrival_evidence_hash). Only evidence_hash is written: the trigger that
    clears it when the evidence changes does not fire.
    """
    if known is None:
        known = item_evidence_hash(
            ReviewItem.objects.only("subject", "payload", "attachments", "suggestion").get(
                pk=item_id
            )
        )
    ReviewItem.objects.filter(pk=item_id).update(evidence_hash=known)
    return known


def _replayed(existing: ReviewItem, *, client: ApiClient | None, source_hash: str) -> ReviewItem:
    """Return the item a replayed key names, or refuse without naming what the caller can't see."""
    # The item is the caller's own, but auto-escalation may have moved it to a queue the
    # client is not granted; then it is as invisible as any other item there.
    visible = client is None or client.queues.filter(pk=existing.queue_id).exists()
    if existing.source_hash == source_hash and visible:
        return existing
    if not visible:
        raise IdempotencyConflict(
            "That idempotency key was already used by this client in this queue, for an item "
            "that is no longer in a queue it may see."
        )
    raise IdempotencyConflict(
        f"Idempotency key {existing.idempotency_key!r} already names item {existing.pk} "
        "with a different source_hash."
    )


def replace_evidence(
    *, item_id: int, actor: User, payload: Any, subject: str | None = None
) -> ReviewItem:
    """Replace a pending, leased or held item's payload (and subject); AlreadyDecided once decided.

    A held item comes back to its queue at once: what it waited for has arrived.
    """
    with transaction.atomic():
        guard_timeouts()
        # The row lock orders this against a concurrent fenced close: if the close commits
        # first we see 'decided' and refuse; if we commit first the close re-reads our payload
        # and the holder's evidence hash no longer matches (EvidenceChanged).
        item = ReviewItem.objects.select_for_update().filter(pk=item_id).first()
        if item is None:
            raise ItemNotFound()
        require_may_send_evidence(user_id=signed_in_id(actor), queue_id=item.queue_id)
        if item.state == ItemState.DECIDED:
            raise AlreadyDecided()
        before = item_evidence_hash(item)
        item.payload = payload
        if subject is not None:
            item.subject = subject
        item.evidence_updated_at = database_now()
        item.save(update_fields=["payload", "subject", "evidence_updated_at"])
        # The payload as jsonb stored it (-0.0 is 0.0, 1E+2 is 100): the hash a reviewer's page
        # shows from now on, and what the caller sees, not the spelling that was sent.
        item.refresh_from_db(fields=["payload"])
        after = item_evidence_hash(item)
        item.evidence_hash = store_evidence_hash(item_id=item.pk, known=after)
        ItemEvent.objects.create(
            item=item,
            kind=ItemEventKind.EVIDENCE_REPLACED,
            actor=actor if actor.is_authenticated else None,
            detail={"previous_evidence_hash": before, "evidence_hash": after},
        )
        if item.state == ItemState.HELD:
            resume_hold(item_id=item.pk, actor=actor, cause="evidence_replaced")
            item.refresh_from_db()
    logger.info(
        "evidence replaced",
        extra=log_extra(item_id=item.pk, trace_id=item.trace_id, reviewer=actor.pk),
    )
    return item
