"""Decisions and overturns: the fenced close, the append-only insert, the standing outcome."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import BooleanField, CharField, F, Func, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from queue_app.db.runner import is_missing_reason
from queue_app.errors import (
    AlreadySuperseded,
    EvidenceChanged,
    InvalidBounds,
    InvalidReason,
    InvalidVerdict,
    NotPermitted,
    ReviewError,
    StaleLease,
    WarningsNotSeen,
)
from queue_app.evidence import item_evidence_hash
from queue_app.models import (
    CORRECTED_VERDICTS,
    REVIEW_VERDICTS,
    ApiClient,
    Decision,
    DecisionStatus,
    ItemStory,
    LaneKind,
    LaneResult,
    LaneTask,
    Queue,
    ReasonCode,
    ReviewItem,
    Verdict,
)
from queue_app.second_person import QA_VERDICTS, qa_draw
from queue_app.services._common import (
    NOTE_MAX_LENGTH,
    User,
    guard_timeouts,
    log_extra,
    logger,
    parse_token,
    signed_in_id,
)
from queue_app.services.handoff import HANDOFF_REFUSAL, handoff_refusal, is_handoff_violation
from queue_app.services.leases import explain_stale_lease, item_queue_id


def reason_codes_for(*, queue: Queue | int, verdict: str) -> QuerySet[ReasonCode]:
    """Return the active reason codes a new decision of this verdict may use in this queue."""
    queue_id = queue if isinstance(queue, int) else queue.pk
    return ReasonCode.objects.filter(queue_id=queue_id, verdict=verdict, retired_at__isnull=True)


def _code(reason_code: str | ReasonCode) -> str:
    return reason_code.code if isinstance(reason_code, ReasonCode) else reason_code


def submit_decision(
    *,
    item_id: int,
    reviewer: User,
    lease_token: uuid.UUID | str,
    verdict: str,
    reason_code: str | ReasonCode,
    evidence_hash: str,
    note: str = "",
    queue_id: int | None = None,
    warnings_seen: bool | None = None,
    suggestion_view: str | None = None,
    suggestion_shown_at: datetime | None = None,
) -> Decision:
    """Close a leased item with a verdict, fenced by the lease token and the evidence hash.

    queue_id is the queue the caller found the item in (the console loads the item anyway);
    without it the item's is read first, one primary-key read (the API's by-id routes).
    warnings_seen: whether the reviewer confirmed reading the evidence rules' warnings, from
    a page that shows them (the console); False refuses an item whose rules warn
    (WarningsNotSeen). None: the caller shows no warnings (the API, the demo seed).
    suggestion_view, suggestion_shown_at: what the reviewer saw of the item's machine
    suggestion and when (services.suggestions.Seen); None: not shown. Ignored by the database
    for an item without one.
    """
    token = parse_token(lease_token)
    if verdict not in REVIEW_VERDICTS:
        raise InvalidVerdict()
    if len(note) > NOTE_MAX_LENGTH:
        raise InvalidBounds(f"The note is longer than {NOTE_MAX_LENGTH} characters.")
    if not reviewer.is_authenticated or not reviewer.is_active:
        raise NotPermitted("You no longer have access to this queue.")
    if queue_id is None:
        queue_id = item_queue_id(item_id=item_id)
        if queue_id is None:
            raise StaleLease()
    time_zone = timezone.get_current_timezone_name()
    try:
        # One statement: every rule of the fence is a condition of
        # decisions_sql.CLOSE_AND_RECORD_DECISION.
        # When one does not hold it writes nothing, and _refusal reads the row to say which.
        with transaction.atomic():
            decision = Decision.objects.close_and_record(
                item_id=item_id,
                queue_id=queue_id,
                lease_token=token,
                reviewer_id=reviewer.pk,
                verdict=verdict,
                reason_code=_code(reason_code),
                evidence_hash=evidence_hash,
                note=note,
                qa_draw=qa_draw(item_id=item_id, lease_token=token)
                if verdict in QA_VERDICTS
                else None,
                warnings_seen=warnings_seen is not False,
                time_zone=time_zone,
                suggestion_view=suggestion_view,
                suggestion_shown_at=suggestion_shown_at,
                lock_timeout_ms=settings.REVIEW_LOCK_TIMEOUT_MS,
                statement_timeout_ms=settings.REVIEW_STATEMENT_TIMEOUT_MS,
            )
    except IntegrityError as exc:
        if is_missing_reason(exc):
            raise InvalidReason() from None
        if is_handoff_violation(exc):  # the claim passes such items over; the database agrees
            raise NotPermitted(HANDOFF_REFUSAL) from None
        raise
    if decision is None:
        raise _refusal(
            item_id=item_id,
            queue_id=queue_id,
            token=token,
            reviewer=reviewer,
            verdict=verdict,
            evidence_hash=evidence_hash,
            warnings_seen=warnings_seen,
            time_zone=time_zone,
        )
    logger.info(
        "decision recorded",
        extra=log_extra(
            decision_id=decision.pk,
            item_id=item_id,
            queue=decision.queue_slug,
            reviewer=reviewer.pk,
            verdict=verdict,
        ),
    )
    return decision


def _refusal(
    *,
    item_id: int,
    queue_id: int,
    token: uuid.UUID,
    reviewer: User,
    verdict: str,
    evidence_hash: str,
    warnings_seen: bool | None,
    time_zone: str,
) -> ReviewError:
    """Say which condition of the one-statement decide failed, from the row as it is now.

    Called only after the statement wrote nothing; it reads, and the rules stay in the
    statement: each condition is read back as a column, and the first that fails is named.
    """
    facts = Decision.objects.refusal_facts(
        item_id=item_id,
        queue_id=queue_id,
        lease_token=token,
        reviewer_id=signed_in_id(reviewer),
        verdict=verdict,
        evidence_hash=evidence_hash,
        time_zone=time_zone,
    )
    if facts is None or not facts["holds_lease"]:
        return explain_stale_lease(item_id=item_id, user=reviewer)
    if not facts["allowed"]:
        return NotPermitted("You no longer have access to this queue.")
    if not facts["same_evidence"]:
        # Also an item without a stored hash (from before every writer kept one, until
        # backfill_evidence_hashes gives it one): what the page showed cannot be vouched for.
        return EvidenceChanged()
    if not facts["may_escalate"]:
        return InvalidVerdict("This queue has no escalation queue to escalate to.")
    if warnings_seen is False and facts["warns"]:
        return WarningsNotSeen()
    # Everything holds again: the row changed between the statement and this read.
    return StaleLease()


def check_needed(*, queue_id: int, verdict: str, item_id: int) -> bool:
    """Whether the queue's maker-checker policies hold a decision of this verdict on the item.

    Judged by queue_app_check_needed, the function the one-statement decide calls, on the
    payload as stored.
    """
    return bool(
        ReviewItem.objects.filter(pk=item_id)
        .annotate(
            needed=Func(
                Value(queue_id),
                Value(verdict, output_field=CharField()),
                F("payload"),
                function="queue_app_check_needed",
                output_field=BooleanField(),
            )
        )
        .values_list("needed", flat=True)
        .get()
    )


def standing_decision(*, item: ReviewItem | int) -> Decision | None:
    """Return the decision that stands for the item now (queue_app/models/story.py), or None."""
    item_id = item if isinstance(item, int) else item.pk
    return (
        Decision.objects.filter(
            pk__in=ItemStory.objects.filter(item_id=item_id).values("standing_decision")
        )
        .select_related("reason_code", "reviewer")
        .first()
    )


def standing_outcome(*, item: ReviewItem | int) -> str | None:
    """Return the verdict that stands for the item now, or None if undecided."""
    item_id = item if isinstance(item, int) else item.pk
    return (
        ItemStory.objects.filter(item_id=item_id).values_list("standing_outcome", flat=True).first()
    )


def four_eyes_refusal(*, decision: Decision, user: User) -> str | None:
    """Return why four eyes bars this user from overturning in the decision's chain, or None.

    Nobody who authored any decision on the item (the original verdict or any overturn) may
    write an overturn on it, and an API client's decisions count as its creator's. The
    database's insert trigger (decision_chain) enforces the same rule; this says it clearly.
    """
    mine = (
        ApiClient.objects.filter(user_id=signed_in_id(user))
        .values_list("created_by_id", flat=True)
        .first()
        or user.pk
    )
    clash = (
        Decision.objects.filter(item_id=decision.item_id)
        .annotate(principal=Coalesce("reviewer__api_client__created_by_id", "reviewer_id"))
        .filter(principal=mine)
        .order_by("id")
        .first()
    )
    if clash is None:
        return None
    if clash.pk == decision.pk and clash.reviewer_id == user.pk:
        return "Four eyes: you cannot overturn a decision you made yourself."
    if clash.reviewer_id == user.pk:
        return (
            f"Four eyes: you made decision #{clash.pk} on this item, so someone else must "
            "overturn in its chain."
        )
    client = ApiClient.objects.filter(user_id=clash.reviewer_id, created_by_id=user.pk).first()
    if client is not None:
        return (
            f"Four eyes: decision #{clash.pk} on this item was made by API client "
            f"“{client.name}”, which you created, so someone else must overturn in its chain."
        )
    return (
        f"Four eyes: decision #{clash.pk} on this item counts as yours, so someone else must "
        "overturn in its chain."
    )


NO_OVERTURN_PERMISSION = "You do not have permission to overturn decisions."


def overturn_decision(
    *,
    decision_id: int,
    admin: User,
    corrected_verdict: str,
    reason_code: str | ReasonCode,
    note: str = "",
) -> Decision:
    """Supersede a standing decision with an overturn row (never an edit)."""
    # Asked here to refuse before any work; the insert's trigger asks again
    # (decision_overturn_permission), since has_perm's answer is cached on the user object for
    # the whole request.
    if not admin.is_authenticated or not admin.has_perm("queue_app.can_overturn"):
        raise NotPermitted(NO_OVERTURN_PERMISSION)
    if corrected_verdict not in CORRECTED_VERDICTS:
        raise InvalidVerdict("An overturn leaves either approve or reject standing.")
    if len(note) > NOTE_MAX_LENGTH:
        raise InvalidBounds(f"The note is longer than {NOTE_MAX_LENGTH} characters.")
    with transaction.atomic():
        guard_timeouts()
        # The item's row first, then the decision's: the order of every lane finish (task,
        # item, then an adjudication's overturn) and of the overturn trigger, which takes the
        # item's lock anyway (decision_separation), so an overturn and a finish never deadlock.
        item_id = Decision.objects.filter(pk=decision_id).values_list("item_id", flat=True)
        list(ReviewItem.objects.select_for_update().filter(pk__in=item_id).values_list("pk"))
        # The row lock serialises two admins overturning the same decision at once; the second
        # then sees the first's overturn and gets AlreadySuperseded, not a constraint error.
        target = (
            Decision.objects.select_for_update(of=("self",))
            .select_related("item")
            .get(pk=decision_id)
        )
        current = overturn_of(decision_id=target.pk)
        if current is not None:
            raise AlreadySuperseded(already_overturned_refusal(current))
        if target.verdict == Verdict.ESCALATE:
            raise InvalidVerdict(
                "An escalation is not overturned; decide the escalated item in its own queue."
            )
        unconfirmed = unconfirmed_check_refusal(decision_id=target.pk)
        if unconfirmed is not None:
            raise InvalidVerdict(unconfirmed)
        refusal = handoff_refusal(item=target.item, user=admin) or four_eyes_refusal(
            decision=target, user=admin
        )
        if refusal is not None:
            raise NotPermitted(refusal)
        if target.standing_verdict == corrected_verdict:
            raise InvalidVerdict(f"The decision already stands as {corrected_verdict}.")
        item = target.item
        # An overturn is a decision like any other: a corrected verdict the queue's check
        # policy covers waits for a second person's confirmation before its effect, through
        # the same lane as a reviewer's (INSERT_DECISION, lanes_sql.CONFIRM_CHECK).
        needs_check = check_needed(
            queue_id=target.queue_id, verdict=corrected_verdict, item_id=item.pk
        )
        try:
            with transaction.atomic():
                overturn = Decision.objects.insert(
                    item_id=item.pk,
                    queue_id=target.queue_id,
                    reviewer_id=admin.pk,
                    verdict=Verdict.OVERTURN,
                    reason_code=_code(reason_code),
                    evidence_hash=item_evidence_hash(item),
                    note=note,
                    supersedes_id=target.pk,
                    corrected_verdict=corrected_verdict,
                    needs_check=needs_check,
                )
        except IntegrityError as exc:
            if is_missing_reason(exc):
                raise InvalidReason() from None
            if "supersedes" in str(exc):  # decision_one_overturn, had the check above raced
                current = overturn_of(decision_id=target.pk)
                raise AlreadySuperseded(
                    already_overturned_refusal(current) if current else None
                ) from None
            if "unconfirmed" in str(exc):  # decision_round's refusal, had a check raced
                raise InvalidVerdict(UNCONFIRMED_OVERTURN) from None
            if "four eyes" in str(exc):  # the trigger's verdict, had the check above raced
                raise NotPermitted("Four eyes: someone else must overturn this item.") from None
            if is_handoff_violation(exc):  # the decision_handoff trigger
                raise NotPermitted(HANDOFF_REFUSAL) from None
            if "separation:" in str(exc):  # decision_separation: one person, one part
                raise NotPermitted(separation_refusal(exc)) from None
            if "overturn permission:" in str(
                exc
            ):  # decision_overturn_permission, had a revocation raced
                raise NotPermitted(NO_OVERTURN_PERMISSION) from None
            raise
    logger.info(
        "decision overturned",
        extra=log_extra(
            decision_id=overturn.pk,
            supersedes=target.pk,
            item_id=item.pk,
            reviewer=admin.pk,
            verdict=corrected_verdict,
        ),
    )
    return overturn


def overturn_of(*, decision_id: int) -> Decision | None:
    """Return the overturn of this decision that is in force or awaits its check, if any.

    A returned overturn stays in the log but corrects nothing, so it is not the answer; the
    database keeps at most one other (the decision_one_overturn trigger).
    """
    return (
        Decision.objects.filter(supersedes_id=decision_id)
        .exclude(story__status=DecisionStatus.RETURNED)
        .select_related("story")
        .order_by("-id")
        .first()
    )


def replaced_by(*, decision_id: int) -> Decision | None:
    """Return the overturn in force that replaced this decision, if any (not one awaiting)."""
    overturn = overturn_of(decision_id=decision_id)
    if overturn is None or overturn.story.status == DecisionStatus.AWAITING_CHECK:
        return None
    return overturn


def overturns_returned(*, decision_id: int) -> list[Decision]:
    """Return the overturns of this decision that a checker returned, oldest first."""
    return list(
        Decision.objects.filter(
            supersedes_id=decision_id, story__status=DecisionStatus.RETURNED
        ).order_by("id")
    )


def already_overturned_refusal(overturn: Decision) -> str:
    """Say why a decision with this overturn in force or awaiting its check is not overturned."""
    if overturn.story.status == DecisionStatus.AWAITING_CHECK:
        return (
            f"Overturn #{overturn.pk} of this decision ({overturn.corrected_verdict}) awaits its "
            "check: a second person confirms or returns it first. Nothing was recorded."
        )
    return AlreadySuperseded.message


OPEN_ADJUDICATION_REFUSAL = (
    "A QA reviewer disagreed with this decision and the adjudication is open: it is settled in "
    "the adjudication lane (uphold or overturn there), not overturned beside it. Nothing was "
    "recorded."
)
PART_IN_CHAIN_REFUSAL = (
    "Separation of duties: you checked, QA-reviewed or adjudicated this decision, so someone "
    "else must overturn it. Nothing was recorded."
)


def separation_refusal(exc: Exception) -> str:
    """Say in words why the decision_separation trigger refused an overturn."""
    if "open adjudication" in str(exc):
        return OPEN_ADJUDICATION_REFUSAL
    return PART_IN_CHAIN_REFUSAL


UNCONFIRMED_OVERTURN = (
    "This decision has not been confirmed by its checker, so it has no effect to overturn: "
    "the checker can return it instead."
)


def unconfirmed_check_refusal(*, decision_id: int) -> str | None:
    """Why a decision cannot be overturned because of its check, or None.

    An unconfirmed decision (its check open, or returned) has no effect yet; a checker
    returns it. The database refuses the same (the decision_round trigger).
    """
    task = (
        LaneTask.objects.filter(decision_id=decision_id, kind=LaneKind.CHECK)
        .select_related("outcome")
        .first()
    )
    if task is None:
        return None
    result = getattr(getattr(task, "outcome", None), "result", None)
    if result == LaneResult.CONFIRMED:
        return None
    if result == LaneResult.RETURNED:
        return (
            "This decision was returned by its checker; it never took effect and is not "
            "overturned. The item's later decision is the one that counts."
        )
    return UNCONFIRMED_OVERTURN


def find_completed_decision(
    *,
    item_id: int,
    reviewer: User,
    lease_token: uuid.UUID | str,
    verdict: str,
    reason_code: str,
    evidence_hash: str,
) -> Decision | None:
    """Return the decision this exact completion already recorded (a client's retry), if any."""
    try:
        token = parse_token(lease_token)
    except StaleLease:
        return None
    # Decisions store the lease token that fenced them, so a retry is recognised by what it
    # names, not guessed from timing; a different verdict, reason or hash is not a retry.
    return (
        Decision.objects.filter(
            item_id=item_id,
            reviewer_id=reviewer.pk,
            lease_token=token,
            verdict=verdict,
            reason_code__code=reason_code,
            evidence_hash=evidence_hash,
        )
        .exclude(verdict=Verdict.OVERTURN)
        .select_related("reason_code", "reviewer")
        .first()
    )


def item_decisions(*, item_id: int) -> list[Decision]:
    """Return the item's decisions in order, with reason, author, effect and status loaded."""
    return list(
        Decision.objects.filter(item_id=item_id)
        .select_related("reason_code", "reviewer", "applied", "effect_job", "story")
        .order_by("id")
    )
