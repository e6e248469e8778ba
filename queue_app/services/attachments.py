"""Evidence attachments: put by upstream while the item is open, revealed one by one to reviewers.

A put replaces the file under its name the way replace_evidence replaces the payload: under the
item's row lock, refused once decided, recorded as an item event with the evidence hash before
and after, and ending a hold (what a hold waits for is usually a document). The hash covers
the item's attachment entries, so a reviewer who opened the item before the put gets *evidence
changed* when they submit.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import transaction

from queue_app import evidence_files
from queue_app.errors import AlreadyDecided, AttachmentTooLarge, InvalidBounds, ItemNotFound
from queue_app.evidence import attachments_of, item_evidence_hash
from queue_app.models import ItemEvent, ItemEventKind, ItemState, ReviewItem
from queue_app.services._common import (
    User,
    database_now,
    guard_timeouts,
    log_extra,
    logger,
    signed_in_id,
)
from queue_app.services.access import require_may_send_evidence
from queue_app.services.holds import resume_hold
from queue_app.services.intake import store_evidence_hash


def put_attachment(*, item_id: int, actor: User, name: str, data: bytes) -> ReviewItem:
    """Attach (or replace) the file called name on an open item; a held item comes back at once."""
    if not evidence_files.valid_name(name):
        raise InvalidBounds(f"The attachment name must be {evidence_files.NAME_RULE}.")
    # Decoding and re-encoding happen before any lock is taken, and so does storing: a blob
    # no row names (the transaction below refused) is harmless, content-addressed garbage,
    # while a row naming a blob that was never stored would be evidence nobody can see.
    file = evidence_files.clean(data)
    evidence_files.keep(file)
    with transaction.atomic():
        guard_timeouts()
        # The row lock orders this against a concurrent fenced close, as for the payload: a
        # close that commits first leaves 'decided' (refused here, and by the trigger
        # item_attachments_frozen); a put that commits first changes the hash the close compares.
        item = ReviewItem.objects.select_for_update().filter(pk=item_id).first()
        if item is None:
            raise ItemNotFound()
        require_may_send_evidence(user_id=signed_in_id(actor), queue_id=item.queue_id)
        if item.state == ItemState.DECIDED:
            raise AlreadyDecided()
        current = attachments_of(item.attachments)
        previous = current.get(name)
        if previous is not None and previous.get("sha256") == file.sha256:
            return item  # the same bytes under the same name: nothing changed, nothing to record
        updated = {**current, name: file.entry}
        _check_item_limits(updated)
        before = item_evidence_hash(item)
        item.attachments = updated
        item.evidence_updated_at = database_now()
        item.save(update_fields=["attachments", "evidence_updated_at"])
        after = item_evidence_hash(item)
        # The entries read back as written (strings and an int): their hash is the row's.
        item.evidence_hash = store_evidence_hash(item_id=item.pk, known=after)
        ItemEvent.objects.create(
            item=item,
            kind=ItemEventKind.ATTACHMENT_PUT,
            actor=actor if actor.is_authenticated else None,
            detail={
                "name": name,
                **file.entry,
                "previous_sha256": previous.get("sha256") if previous else None,
                "previous_evidence_hash": before,
                "evidence_hash": after,
            },
        )
        if item.state == ItemState.HELD:
            # The awaited document has arrived: the item goes back to its queue in this
            # transaction, as it does when its evidence is replaced.
            resume_hold(item_id=item.pk, actor=actor, cause="attachment_put")
            item.refresh_from_db()
    logger.info(
        "attachment put",
        extra=log_extra(item_id=item.pk, trace_id=item.trace_id, attachment=name),
    )
    return item


def _check_item_limits(entries: dict[str, Any]) -> None:
    limit_count = settings.REVIEW_ATTACHMENTS_MAX_COUNT
    if len(entries) > limit_count:
        raise AttachmentTooLarge(
            f"An item may have at most {limit_count} attachments.", limit_bytes=0
        )
    total = sum(int(entry.get("size", 0)) for entry in entries.values())
    limit = settings.REVIEW_ATTACHMENTS_MAX_ITEM_BYTES
    if total > limit:
        raise AttachmentTooLarge(
            f"The item's attachments would total {total} bytes; the limit is {limit} bytes "
            "per item.",
            limit_bytes=limit,
        )


def attachment_by_digest(*, item: ReviewItem, sha256: str) -> tuple[str, dict[str, Any]] | None:
    """Return (name, entry) of the item's current attachment with this digest, if any."""
    for name, entry in sorted(attachments_of(item.attachments).items()):
        if entry.get("sha256") == sha256:
            return name, entry
    return None


def open_attachment(*, sha256: str) -> File:
    """Open the stored bytes of an attachment for reading."""
    return evidence_files.storage().open(evidence_files.blob_path(sha256), "rb")


def record_reveal(*, item: ReviewItem, user: User, name: str, sha256: str) -> ItemEvent:
    """Record that a reviewer revealed a blurred image of a sensitive queue."""
    return ItemEvent.objects.create(
        item=item,
        kind=ItemEventKind.ATTACHMENT_REVEALED,
        actor=user if user.is_authenticated else None,
        detail={"name": name, "sha256": sha256},
    )
