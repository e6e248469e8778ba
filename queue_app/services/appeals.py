"""Appeals (DSA Article 20): file a complaint against a decision, and decide it.

An appeal is filed by the upstream platform on the affected person's behalf (the API) and
becomes a task of its queue's appeals lane (LaneTask kind "appeal"). The lane machinery leases
it (services.lanes.claim_lane_task), fences it and shows it in My work and on /ops/; the
database bars anyone with a part in the decision's chain, and every API client, from holding
or deciding it (queue_app_appeal_barred). Deciding it writes the task's outcome: upheld, or
overturned through services.overturn_decision (effects, four eyes and the log as for any
overturn), with the outcome notice to the affected person in the same transaction.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from queue_app.datetimes import add_months
from queue_app.errors import AppealRefused, InvalidBounds, InvalidVerdict, NotPermitted
from queue_app.jsonutil import exact_dumps
from queue_app.models import (
    ApiClient,
    Appeal,
    AppealNotice,
    AppliedDecision,
    Decision,
    DecisionStatus,
    ItemEvent,
    ItemEventKind,
    LaneKind,
    LaneOutcome,
    LaneResult,
    LaneTask,
    StatementOfReasons,
    StatementPolicy,
    Verdict,
)
from queue_app.models.appeals import (
    APPEAL_ATTACHMENTS_MAX,
    APPEAL_REFERENCE_MAX_LENGTH,
    APPEAL_TEXT_MAX_LENGTH,
)
from queue_app.services._common import NOTE_MAX_LENGTH, User, log_extra, logger, parse_token
from queue_app.services.decisions import overturn_decision, overturn_of, replaced_by

#: Without a statement policy (or before one sets them): six months to appeal, as Article 20
#: requires at least, and two weeks to decide.
DEFAULT_WINDOW_MONTHS = 6
DEFAULT_DECIDE_WITHIN = timedelta(days=14)

APPEAL_REASONS_NEEDED = (
    "Give the reasons for the outcome: the affected person's notice quotes them. Nothing was "
    "recorded."
)


@dataclass(frozen=True)
class AppealRequest:
    """What the platform sent, validated for shape by the API's schema."""

    reference: str
    text: str
    decision_id: int | None = None
    statement_puid: str | None = None
    attachments: tuple[dict[str, Any], ...] = ()

    def sha256(self) -> str:
        """The hash of what was asked: a replay with the same body gets the same appeal."""
        canonical = exact_dumps(
            {
                "decision": self.decision_id,
                "statement": self.statement_puid,
                "text": self.text,
                "attachments": list(self.attachments),
            },
            sort_keys=True,
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


def _policy(queue_id: int) -> StatementPolicy | None:
    return StatementPolicy.objects.filter(queue_id=queue_id).first()


def appeal_window_ends(*, decision: Decision, statement: StatementOfReasons | None) -> datetime:
    """The last moment the decision may be appealed: the policy's window after its statement
    (the affected person was told then), or after the decision was applied when it has none."""
    policy = _policy(decision.queue_id)
    months = policy.appeal_window_months if policy else DEFAULT_WINDOW_MONTHS
    if statement is not None:
        start = statement.created_at
    else:
        applied = AppliedDecision.objects.filter(decision_id=decision.pk).first()
        start = applied.applied_at if applied else decision.created_at
    local = timezone.localtime(start)
    day = add_months(local.date(), months)
    return local.replace(year=day.year, month=day.month, day=day.day)


def _refuse(field: str, code: str, message: str, status: int = 422) -> AppealRefused:
    return AppealRefused(message + " Nothing was written.", field=field, code=code, status=status)


def _validate(request: AppealRequest) -> None:
    """Refuse a request whose fields are wrong, naming the field (the schema checks shape)."""
    if not request.reference.strip() or len(request.reference) > APPEAL_REFERENCE_MAX_LENGTH:
        raise _refuse(
            "reference", "invalid", f"reference: 1 to {APPEAL_REFERENCE_MAX_LENGTH} characters."
        )
    if not request.text.strip() or len(request.text) > APPEAL_TEXT_MAX_LENGTH:
        raise _refuse("text", "invalid", f"text: 1 to {APPEAL_TEXT_MAX_LENGTH} characters.")
    for name, value in (("reference", request.reference), ("text", request.text)):
        if "\x00" in value:
            raise _refuse(name, "invalid", f"{name}: contains a NUL character.")
    if (request.decision_id is None) == (request.statement_puid is None):
        raise _refuse(
            "decision",
            "invalid",
            "Name the decision appealed: either `decision` (its id) or `statement` (the PUID "
            "of its statement of reasons), not both.",
        )
    if len(request.attachments) > APPEAL_ATTACHMENTS_MAX:
        raise _refuse("attachments", "invalid", f"attachments: at most {APPEAL_ATTACHMENTS_MAX}.")


def _target(
    request: AppealRequest, client: ApiClient
) -> tuple[Decision, StatementOfReasons | None]:
    """The decision appealed and its statement, if this client may see its queue."""
    granted = client.queues.values_list("pk", flat=True)
    if request.statement_puid is not None:
        statement = (
            StatementOfReasons.objects.select_related("decision")
            .filter(puid=request.statement_puid, decision__queue_id__in=granted)
            .first()
        )
        if statement is None:
            raise _refuse(
                "statement",
                "unknown_statement",
                f"statement: there is no statement {request.statement_puid!r} in a queue this "
                "client is granted.",
            )
        return statement.decision, statement
    decision_id = request.decision_id
    assert decision_id is not None  # _validate: exactly one of the two is given
    decision = Decision.objects.filter(pk=decision_id, queue_id__in=granted).first()
    if decision is None:
        raise _refuse(
            "decision",
            "unknown_decision",
            f"decision: there is no decision {request.decision_id} in a queue this client is "
            "granted.",
        )
    return decision, StatementOfReasons.objects.filter(decision_id=decision.pk).first()


def _existing(client: ApiClient, request: AppealRequest) -> Appeal | None:
    """The appeal this client already filed under this reference; a different body is a 409."""
    found = Appeal.objects.filter(client=client, reference=request.reference).first()
    if found is not None and found.request_sha256 != request.sha256():
        raise _refuse(
            "reference",
            "idempotency_conflict",
            f"reference: appeal #{found.pk} was filed under {request.reference!r} with a "
            "different body.",
            status=409,
        )
    return found


def file_appeal(*, client: ApiClient, request: AppealRequest) -> tuple[Appeal, bool]:
    """File an appeal; return it and whether it was created (False: the same one replayed).

    Refused (AppealRefused, nothing written): a field that is wrong; a decision that is not
    final and in force (not applied, an escalation, or replaced or being replaced by an
    overturn); one appealed already; a window that closed.
    """
    _validate(request)
    found = _existing(client, request)
    if found is not None:
        return found, False
    decision, statement = _target(request, client)
    field = "statement" if request.statement_puid is not None else "decision"
    status = decision.story.status if hasattr(decision, "story") else None
    if decision.verdict == Verdict.ESCALATE or status != DecisionStatus.APPLIED:
        raise _refuse(
            field,
            "not_appealable",
            f"{field}: decision #{decision.pk} is not a final decision in force "
            f"({status or 'unknown'}); only a decision carried out can be appealed.",
            status=409,
        )
    if overturn_of(decision_id=decision.pk) is not None:
        raise _refuse(
            field,
            "not_appealable",
            f"{field}: decision #{decision.pk} has been overturned (or its overturn awaits "
            "its check); appeal the decision that stands.",
            status=409,
        )
    now = timezone.now()
    window_ends = appeal_window_ends(decision=decision, statement=statement)
    if now > window_ends:
        raise _refuse(
            field,
            "appeal_window_closed",
            f"{field}: the window to appeal decision #{decision.pk} closed at "
            f"{window_ends.isoformat()}.",
        )
    policy = _policy(decision.queue_id)
    due_at = now + (policy.appeal_decide_within if policy else DEFAULT_DECIDE_WITHIN)
    try:
        with transaction.atomic():
            task = LaneTask.objects.create(
                kind=LaneKind.APPEAL,
                queue_id=decision.queue_id,
                item_id=decision.item_id,
                decision=decision,
                maker_id=decision.reviewer_id,
                due_at=due_at,
            )
            appeal = Appeal.objects.create(
                queue_id=decision.queue_id,
                item_id=decision.item_id,
                decision=decision,
                statement=statement,
                client=client,
                reference=request.reference,
                request_sha256=request.sha256(),
                text=request.text,
                attachments=list(request.attachments),
                received_at=now,
                due_at=due_at,
                window_ends_at=window_ends,
                task=task,
            )
            ItemEvent.objects.create(
                item_id=decision.item_id,
                kind=ItemEventKind.APPEAL_RECEIVED,
                actor=client.user,
                detail={"appeal_id": appeal.pk, "decision_id": decision.pk, "task_id": task.pk},
            )
    except IntegrityError as exc:
        text = str(exc)
        if "appeal_reference_once" in text:  # the same reference, filed concurrently
            again = _existing(client, request)
            if again is not None:
                return again, False
        if "lanetask_one_per_kind" in text:
            raise _refuse(
                field,
                "already_appealed",
                f"{field}: decision #{decision.pk} has been appealed already.",
                status=409,
            ) from None
        raise
    logger.info(
        "appeal filed",
        extra=log_extra(appeal_id=appeal.pk, decision_id=decision.pk, client=client.pk),
    )
    return appeal, True


def appeal_for_client(*, client: ApiClient, appeal_id: int) -> Appeal | None:
    """The appeal, if it is in a queue this client is granted."""
    return (
        Appeal.objects.select_related("task__outcome", "decision", "statement")
        .filter(pk=appeal_id, queue_id__in=client.queues.values_list("pk", flat=True))
        .first()
    )


def returned_reversal(outcome: LaneOutcome | None) -> Decision | None:
    """The overturn of a reversal that its checker returned (four eyes), if this is one.

    Such an appeal's outcome is not final: the decision appealed still stands, and the outcome
    notice is held (appeal_delivery waits for the overturn to be applied, which a returned one
    never is). Its task is done and its outcome recorded (both append-only, one appeal task per
    decision), so the appeals lane cannot decide it again: it is shown as such on the lane page,
    in the admin, on /ops/ and through the API, for an operator to take up.
    """
    if outcome is None or outcome.overturn_id is None:
        return None
    overturn = Decision.objects.select_related("story").get(pk=outcome.overturn_id)
    story = getattr(overturn, "story", None)
    if story is not None and story.status == DecisionStatus.RETURNED:
        return overturn
    return None


def appeal_status(appeal: Appeal) -> dict[str, Any]:
    """What the platform may know of an appeal: where it is, and its outcome once decided.

    A reversal its checker returned is "reversal_returned", its notice "held": not final.
    """
    outcome = getattr(appeal.task, "outcome", None)
    notice = AppealNotice.objects.filter(appeal_id=appeal.pk).first()
    returned = returned_reversal(outcome) is not None
    status = "pending" if outcome is None else _RESULT_WORDS[outcome.result]
    notice_status = notice.status if notice else None
    if returned:
        status = "reversal_returned"
        notice_status = "held" if notice_status == "waiting" else notice_status
    return {
        "id": appeal.pk,
        "reference": appeal.reference,
        "decision_id": appeal.decision_id,
        "statement_puid": appeal.statement.puid if appeal.statement else None,
        "received_at": appeal.received_at,
        "due_at": appeal.due_at,
        "window_ends_at": appeal.window_ends_at,
        "status": status,
        "decided_at": outcome.created_at if outcome else None,
        "overturn_id": outcome.overturn_id if outcome else None,
        "corrected_verdict": outcome.verdict or None if outcome else None,
        "reasons": outcome.note if outcome else None,
        "notice": notice_status,
    }


_RESULT_WORDS = {
    LaneResult.UPHELD: "upheld",
    LaneResult.OVERTURNED: "reversed",
    LaneResult.CLOSED: "closed",
}


def decide_appeal(
    *,
    task_id: int,
    user: User,
    lease_token: uuid.UUID | str,
    reverse: bool,
    reasons: str,
    corrected_verdict: str = "",
    reason_code: str = "",
    close: bool = False,
    queue_id: int | None = None,
) -> LaneOutcome:
    """Decide an appeal under its lease: uphold, reverse (an overturn), or close.

    Reverse writes the overturn through services.overturn_decision (four eyes, check policy,
    the log and the apply worker as for every overturn); the task's outcome names it. Close is
    for an appeal whose decision an overturn replaced while it waited. The outcome notice is
    written in the same transaction: exactly once per appeal.
    """
    # Imported here: services.lanes imports this package's decisions module, not this one.
    from queue_app.db.statements import lanes as lanes_sql
    from queue_app.services import lanes

    token = parse_token(lease_token)
    if not reasons.strip():
        raise InvalidBounds(APPEAL_REASONS_NEEDED)
    if len(reasons) > NOTE_MAX_LENGTH or "\x00" in reasons:
        raise InvalidBounds(
            f"The reasons must be at most {NOTE_MAX_LENGTH} characters, without NUL characters."
        )
    if not lanes._may_work_lanes(user) or not user.has_perm("queue_app.can_overturn"):
        raise NotPermitted("Deciding an appeal needs a person with the permission to overturn.")
    try:
        with transaction.atomic():
            row = lanes._lock(
                task_id=task_id, queue_id=queue_id, kind=LaneKind.APPEAL, user=user, token=token
            )
            replaced = replaced_by(decision_id=row["decision_id"])
            if replaced is not None and not close:
                raise InvalidVerdict(
                    f"Decision #{row['decision_id']} no longer stands: overturn #{replaced.pk} "
                    "replaced it while the appeal waited. Close the appeal. Nothing was recorded."
                )
            if replaced is None and close:
                raise InvalidVerdict(
                    f"Decision #{row['decision_id']} still stands: uphold it or reverse it. "
                    "Nothing was recorded."
                )
            overturn_id = None
            verdict = ""
            if reverse and not close:
                overturn = overturn_decision(
                    decision_id=row["decision_id"],
                    admin=user,
                    corrected_verdict=corrected_verdict,
                    reason_code=reason_code,
                    note=reasons,
                )
                overturn_id = overturn.pk
                verdict = corrected_verdict
            result = (
                LaneResult.CLOSED
                if close
                else LaneResult.OVERTURNED
                if reverse
                else LaneResult.UPHELD
            )
            outcome = lanes._finish(
                lanes_sql.FINISH_APPEAL,
                row=row,
                user=user,
                result=result,
                note=reasons,
                verdict=verdict,
                overturn_id=overturn_id,
                wake=True,
            )
    except IntegrityError as exc:
        lanes._word_outcome_refusal(exc)
        if "appeal: " in str(exc):
            raise InvalidVerdict(
                "What stands changed while you decided; open the appeal again. Nothing was "
                "recorded."
            ) from None
        raise
    logger.info(
        "appeal decided",
        extra=log_extra(task_id=task_id, result=outcome.result, reviewer=user.pk),
    )
    return outcome


def appeal_of_task(*, task: LaneTask) -> Appeal | None:
    return Appeal.objects.filter(task_id=task.pk).select_related("statement").first()
