"""Failures a caller can name and turn into a message a person understands."""

from __future__ import annotations


class ReviewError(Exception):
    """Base class: every expected failure of a queue operation."""

    #: Words for a reviewer or API client; views show this, never a traceback.
    message = "The operation could not be completed."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)
        if message:
            self.message = message


class StaleLease(ReviewError):
    """A fenced write refused: the lease named is no longer the caller's.

    ``what`` says why, when it is known (services.explain_stale_lease reads the item's state
    and events): released_by_you, taken, decided, decided_by_you, escalated, reopened, held,
    on_hold.
    """

    message = (
        "This item was reassigned or decided while you had it open; your decision was not recorded."
    )
    what = "stale"

    def __init__(self, message: str | None = None, what: str | None = None) -> None:
        super().__init__(message)
        if what:
            self.what = what


class EvidenceChanged(ReviewError):
    message = "The evidence changed since you opened this item; please review it again."


class InvalidReason(ReviewError):
    message = "That reason code is not one of the reasons allowed for this verdict in this queue."


class WarningsNotSeen(ReviewError):
    """A decision on an item whose evidence rules raise warnings, without saying they were read."""

    message = (
        "This item's evidence raised warnings: confirm that you have read them (the box above "
        "Submit) and decide again. Nothing was recorded."
    )


class InvalidVerdict(ReviewError):
    message = "That verdict is not available here."


class NotPermitted(ReviewError):
    message = "You do not have access to do that."


class AlreadySuperseded(ReviewError):
    message = "That decision has already been overturned; overturn the standing decision instead."


class QueueEmpty(ReviewError):
    message = "There is nothing waiting in this queue right now."


class ItemNotFound(ReviewError):
    message = "No such item."


class InvalidBounds(ReviewError):
    message = "A value is outside its allowed range."


class IdempotencyConflict(ReviewError):
    message = "That idempotency key already names an item with different content."


class AlreadyDecided(ReviewError):
    message = "This item has already been decided; its evidence can no longer change."


class EffectError(ReviewError):
    """An effect could not be carried out this time; the apply worker retries it."""

    message = "The decision's effect could not be carried out; it will be retried."


class PermanentEffectError(EffectError):
    """An effect that retrying cannot fix: the job is marked dead for an operator."""

    message = "The decision's effect was refused; an operator must fix and retry it."


class EffectAborted(EffectError):
    """An effect handler raised SystemExit, KeyboardInterrupt or the like: a failed attempt."""

    message = "The decision's effect tried to stop the worker; it was recorded as a failure."


class UnsupportedAttachment(ReviewError):
    """An attachment refused for what it is: not a JPEG, PNG, WebP or PDF by its content."""

    message = "Attachments must be JPEG, PNG or WebP images, or PDF documents."


class AttachmentTooLarge(ReviewError):
    """An attachment over the per-file limit, or one that would take the item over its total."""

    message = "The attachment is too large."

    def __init__(self, message: str | None = None, limit_bytes: int = 0) -> None:
        super().__init__(message)
        self.limit_bytes = limit_bytes


class InvalidHoldReason(ReviewError):
    message = "That hold reason is not one of the hold reasons of this queue."


class InvalidHoldTime(ReviewError):
    message = "The resume time must be in the future and within the queue's maximum hold."


class InvalidDeadline(ReviewError):
    message = "The deadline is not valid: give due_at or sla_seconds, not both, in the future."


class InvalidSuggestion(ReviewError):
    """A machine suggestion the queue cannot take; field names the part that is wrong."""

    message = "The suggestion is not valid for this queue."

    def __init__(self, message: str | None = None, *, field: str = "suggestion") -> None:
        super().__init__(message)
        self.field = field


class SuggestionSeenInvalid(ReviewError):
    message = (
        "This page's record of the machine suggestion is not one this server gave it, or is for "
        "another item or lease. Nothing was recorded; open the item again."
    )


class AppealRefused(ReviewError):
    """An appeal the queue cannot take: field names the part, code and status the answer.

    422 for a field that is wrong (an unknown decision, a window that closed), 409 for a
    conflict with what exists (a reference reused for another complaint, a decision appealed
    already, a decision no longer standing). Nothing is written.
    """

    message = "The appeal cannot be accepted."

    def __init__(
        self, message: str | None = None, *, field: str, code: str, status: int = 422
    ) -> None:
        super().__init__(message)
        self.field = field
        self.code = code
        self.status = status
