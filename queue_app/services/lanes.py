"""Second-person work: Next check / QA / adjudication, and finishing each, fenced by its lease.

One claim for every lane (lanes_sql.CLAIM_LANE_TASK, parametrised by kind), one fence for every
finish (lanes_sql._FINISH). The database refuses a maker checking their own decision and a
reviewer QA-ing their own (queue_app_lane_barred); the checks here only say it in words first.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from queue_app.db.runner import Result, build_instances, fetch_dicts, run_together
from queue_app.db.statements import access as access_sql
from queue_app.db.statements import lanes as lanes_sql
from queue_app.db.statements import outbox as outbox_sql
from queue_app.errors import (
    EvidenceChanged,
    InvalidBounds,
    InvalidReason,
    InvalidVerdict,
    NotPermitted,
    StaleLease,
)
from queue_app.evidence import row_evidence_hash
from queue_app.models import (
    ApiClient,
    Decision,
    LaneKind,
    LaneOutcome,
    LaneResult,
    LaneTask,
    Queue,
    Verdict,
)
from queue_app.second_person import QA_VERDICTS, automatic_qa_draw, draw_samples, qa_sampled
from queue_app.services._common import (
    NOTE_MAX_LENGTH,
    User,
    log_extra,
    logger,
    parse_token,
)
from queue_app.services.access import queues_for_user
from queue_app.services.decisions import overturn_decision, replaced_by

LANE_NAMES: dict[str, str] = {
    LaneKind.CHECK: "Checks",
    LaneKind.QA: "QA",
    LaneKind.ADJUDICATION: "Adjudication",
    LaneKind.APPEAL: "Appeals",
}

SECOND_PERSON = (
    "You made this decision, or confirmed, QA-reviewed or overturned it (or your API client "
    "did), so someone else must take this task: a second person."
)
LANE_ACCESS_LOST = "You no longer have access to this lane. Nothing was recorded."
RETURN_NEEDS_NOTE = "Say why you return the decision: the maker reads your note."
QA_REASON_REFUSED = (
    "That reason is not one of this queue's reasons for your verdict; choose a reason to "
    "approve for an approval, to reject for a rejection. Nothing was recorded."
)
EVIDENCE_CHANGED_ON_CHECK = (
    "The evidence changed after the maker's decision, so it cannot be confirmed: the item went "
    "back to its queue for a new review. Nothing was confirmed."
)


def _may_work_lanes(user: User) -> bool:
    # Machines decide, people confirm: an API client's service user never works a lane.
    return (
        user.is_authenticated
        and user.is_active
        and not ApiClient.objects.filter(user_id=user.pk).exists()
    )


def user_lane_kinds(*, user: User) -> list[str]:
    """The lanes this user may work at all (queue access decides checks and QA per queue)."""
    if not _may_work_lanes(user):
        return []
    kinds: list[str] = [LaneKind.CHECK, LaneKind.QA]
    if user.has_perm("queue_app.can_overturn"):
        # A reversal is an overturn: appeals are decided by people who may overturn.
        kinds += [LaneKind.ADJUDICATION, LaneKind.APPEAL]
    return kinds


def claim_lane_task(*, queue: Queue, kind: str, user: User) -> LaneTask | None:
    """Lease the oldest open task of a queue's lane to the user (or renew the one they hold)."""
    if kind not in LaneKind.values:
        raise InvalidVerdict("There is no such lane.")
    if kind not in user_lane_kinds(user=user):
        raise NotPermitted("You do not have access to this lane.")
    params = {
        "queue_id": queue.pk,
        "kind": kind,
        "owner_id": user.pk,
        "ttl": queue.lease_ttl,
    }
    try:
        tasks = build_instances(LaneTask, _bounded_write(lanes_sql.CLAIM_LANE_TASK, params))
    except IntegrityError as exc:
        if "second person" not in str(exc):
            raise
        # The claim passes over every task its claimer is barred from, as of its snapshot; the
        # trigger refused a part committed since (the claimer's own overturn in another tab,
        # waited for on the item's lock). A second claim sees it and passes over the task.
        try:
            tasks = build_instances(LaneTask, _bounded_write(lanes_sql.CLAIM_LANE_TASK, params))
        except IntegrityError as again:
            _refuse_barred(again)
            raise
    if not tasks:
        return None
    task = tasks[0]
    logger.info(
        "lane task claimed",
        extra=log_extra(task_id=task.pk, kind=kind, queue=queue.slug, reviewer=user.pk),
    )
    return task


def release_lane_task(
    *, task_id: int, user: User, lease_token: uuid.UUID | str, queue_id: int | None = None
) -> None:
    """Give a task back to its lane, fenced by the token.

    queue_id, here and in every finish, is the queue of the task the caller shows (its
    statements find the task by id and queue: lanes_sql.HOT_PATH); without it the task's is
    read first, one primary-key read.
    """
    params = {
        "task_id": task_id,
        "queue_id": _queue_of(task_id, queue_id),
        "lease_token": parse_token(lease_token),
        "owner_id": user.pk,
    }
    _, rows = _bounded_write(lanes_sql.RELEASE_LANE_TASK, params)
    if not rows:
        raise StaleLease(_stale_message(task_id))


def renew_lane_task(
    *, task_id: int, user: User, lease_token: uuid.UUID | str, queue_id: int | None = None
) -> datetime:
    """Extend the user's lease of a task by its queue's lease TTL; return the new expiry."""
    if not user_lane_kinds(user=user):
        raise NotPermitted("You do not have access to this lane.")
    params = {
        "task_id": task_id,
        "queue_id": _queue_of(task_id, queue_id),
        "lease_token": parse_token(lease_token),
        "owner_id": user.pk,
    }
    _, rows = _bounded_write(lanes_sql.RENEW_LANE_TASK, params)
    if not rows:
        raise StaleLease(_stale_message(task_id))
    return rows[0][0]  # RETURNING lease_expires


def _queue_of(task_id: int, queue_id: int | None) -> int:
    """The task's queue: the caller's, else read by the task's id (no task: a stale lease)."""
    if queue_id is not None:
        return queue_id
    found = LaneTask.objects.filter(pk=task_id).values_list("queue_id", flat=True).first()
    if found is None:
        raise StaleLease("There is no such task.")
    return found


def _note(note: str) -> str:
    if len(note) > NOTE_MAX_LENGTH:
        raise InvalidBounds(f"The note is longer than {NOTE_MAX_LENGTH} characters.")
    if "\x00" in note:  # PostgreSQL text cannot hold it: refused here, not as a DataError
        raise InvalidBounds("The note contains a NUL character; remove it and submit again.")
    return note


def _bounded_write(statement: str, params: dict[str, Any]) -> Result:
    """The timeouts, one write of a task's lease (claim, renew, release) and the COMMIT, in one
    round trip; the write's (column names, rows).

    Behind a finish that holds the task's row, the write waits no longer than the lock
    timeout: the page's heartbeat or Release gets a quick "busy", not a hung request.
    """
    with transaction.atomic():
        _, result = run_together(
            [(access_sql.SET_LOCAL_TIMEOUTS, _timeouts()), (statement, params)], commit=True
        )
    return result


def _timeouts() -> dict[str, str]:
    return {
        "lock_timeout": f"{settings.REVIEW_LOCK_TIMEOUT_MS}ms",
        "statement_timeout": f"{settings.REVIEW_STATEMENT_TIMEOUT_MS}ms",
    }


def _lock(
    *, task_id: int, queue_id: int | None, kind: str, user: User, token: uuid.UUID
) -> dict[str, Any]:
    """The timeouts and the locking read of the task (LOCK_LANE_TASK), in one round trip.

    Refuses a holder who may no longer work the lane (the statement's `allowed`): the caller's
    transaction rolls back and nothing is recorded.
    """
    params = {
        "task_id": task_id,
        "queue_id": _queue_of(task_id, queue_id),
        "kind": kind,
        "lease_token": token,
        "owner_id": user.pk,
        **_timeouts(),
    }
    _, (columns, rows) = run_together(
        [(access_sql.SET_LOCAL_TIMEOUTS, params), (lanes_sql.LOCK_LANE_TASK, params)]
    )
    if not rows:
        raise StaleLease(_stale_message(task_id))
    row = dict(zip(columns, rows[0], strict=True))
    if not row["allowed"]:
        raise NotPermitted(LANE_ACCESS_LOST)
    return row


def _stale_message(task_id: int) -> str:
    task = LaneTask.objects.filter(pk=task_id).select_related("outcome", "lease_owner").first()
    if task is None:
        return "There is no such task."
    outcome = getattr(task, "outcome", None)
    if outcome is not None:
        return (
            f"{outcome.actor_username} already finished this task "
            f"({outcome.get_result_display().lower()}). Nothing was recorded."
        )
    return (
        "This task is no longer leased to you (your lease ran out and someone else took it, "
        "or you gave it back). Nothing was recorded."
    )


def _finish(
    statement: str,
    *,
    row: dict[str, Any],
    user: User,
    result: str,
    wake: bool = False,
    **params: Any,
) -> LaneOutcome:
    values = {
        "task_id": row["id"],
        "queue_id": row["queue_id"],  # the task's, as LOCK_LANE_TASK found it
        "kind": row["kind"],
        "lease_token": row["lease_token"],
        "owner_id": user.pk,
        "result": result,
        "verdict": "",
        "reason_code": None,
        "note": "",
        "overturn_id": None,
        "qa_sampled": False,
        "evidence_changed": False,
        # A check of an overturn (services.overturn_decision) settles a decided item.
        "is_overturn": row["verdict"] == Verdict.OVERTURN,
        **params,
    }
    # The last statement of every finish: the COMMIT travels with it (see run_together), and
    # with wake the apply workers' wake-up after it.
    [finished] = run_together(
        [(statement, values)],
        commit=True,
        after_commit=[(outbox_sql.WAKE_APPLY_WORKERS, {})] if wake else (),
    )
    outcomes = build_instances(LaneOutcome, finished)
    if not outcomes:  # cannot happen under LOCK_LANE_TASK's row lock; said plainly if it does
        raise StaleLease(_stale_message(row["id"]))
    return outcomes[0]


def _word_outcome_refusal(exc: IntegrityError) -> None:
    """Raise the named error for a refusal of the lane outcome's rules, if it is one.

    The outcome's insert trigger and check constraints are the rules; this
    only words their refusals: a barred second person, a QA reason that is not one of the
    queue's active reasons for the verdict, a return or QA review missing what it must say.
    """
    text = str(exc)
    if "second person" in text:
        raise NotPermitted(SECOND_PERSON) from None
    if "QA reason" in text or "laneoutcome_qa_has_verdict" in text:
        raise InvalidReason(QA_REASON_REFUSED) from None
    if "laneoutcome_return_has_note" in text:
        raise InvalidBounds(RETURN_NEEDS_NOTE) from None
    if "adjudication: " in text:  # laneoutcome_adjudication_stands, had an overturn raced
        raise InvalidVerdict(
            "What stands changed while you adjudicated; open the task again. Nothing was recorded."
        ) from None


def no_longer_stands(decision_id: int, overturn: Decision) -> str:
    """Say that an adjudication's decision was replaced and the adjudication can only close."""
    return (
        f"Decision #{decision_id} no longer stands: overturn #{overturn.pk} "
        f"({overturn.corrected_verdict}) replaced it since it was drawn for QA. Upholding or "
        "overturning here would change nothing that stands; close the adjudication (the QA "
        "review still counts towards the original reviewer's agreement). Nothing was recorded."
    )


def _refuse_barred(exc: IntegrityError) -> None:
    """Raise NotPermitted for a lane trigger's refusal of someone with a part in the chain."""
    if "second person" in str(exc):
        raise NotPermitted(SECOND_PERSON) from None


def confirm_check(
    *, task_id: int, user: User, lease_token: uuid.UUID | str, queue_id: int | None = None
) -> LaneOutcome:
    """Confirm a maker's decision: outcome and effect job in one transaction.

    The evidence is re-verified first: if the item's evidence changed since the maker decided,
    the check is recorded as returned (evidence changed) and the item goes back for review;
    EvidenceChanged is raised after that commits.
    """
    token = parse_token(lease_token)
    if not _may_work_lanes(user):
        raise NotPermitted("You do not have access to this lane.")
    changed = False
    try:
        with transaction.atomic():
            row = _lock(
                task_id=task_id, queue_id=queue_id, kind=LaneKind.CHECK, user=user, token=token
            )
            # The attachments' digests and the suggestion are evidence too (queue_app/evidence.py).
            now_hash = row_evidence_hash(row)
            if now_hash != row["evidence_hash"]:
                changed = True
                outcome = _finish(
                    lanes_sql.RETURN_CHECK,
                    row=row,
                    user=user,
                    result=LaneResult.RETURNED,
                    note="Evidence changed after the maker's decision; returned for a new review.",
                    evidence_changed=True,
                )
            else:
                sampled = (
                    # The machine's decision is drawn at its own rate (services.automation).
                    row["verdict"] in QA_VERDICTS
                    and draw_samples(
                        automatic_qa_draw(item_id=row["item_id"]), row["auto_decide_qa_rate"]
                    )
                    if row["automatic"]
                    else qa_sampled(
                        item_id=row["item_id"],
                        lease_token=row["decision_lease_token"],
                        verdict=row["verdict"],
                        rate_percent=row["qa_rate"],
                    )
                )
                outcome = _finish(
                    lanes_sql.CONFIRM_CHECK,
                    row=row,
                    user=user,
                    result=LaneResult.CONFIRMED,
                    qa_sampled=sampled,
                    wake=True,  # CONFIRM_CHECK queued the maker's effect job
                )
    except IntegrityError as exc:
        _word_outcome_refusal(exc)
        raise
    logger.info(
        "check finished",
        extra=log_extra(task_id=task_id, result=outcome.result, reviewer=user.pk),
    )
    if changed:
        raise EvidenceChanged(EVIDENCE_CHANGED_ON_CHECK)
    return outcome


def return_check(
    *,
    task_id: int,
    user: User,
    lease_token: uuid.UUID | str,
    note: str,
    queue_id: int | None = None,
) -> LaneOutcome:
    """Return a maker's decision (a note is required): the item goes back for a new decision."""
    token = parse_token(lease_token)
    if not note.strip():
        raise InvalidBounds(RETURN_NEEDS_NOTE)
    _note(note)
    if not _may_work_lanes(user):
        raise NotPermitted("You do not have access to this lane.")
    try:
        with transaction.atomic():
            row = _lock(
                task_id=task_id, queue_id=queue_id, kind=LaneKind.CHECK, user=user, token=token
            )
            outcome = _finish(
                lanes_sql.RETURN_CHECK, row=row, user=user, result=LaneResult.RETURNED, note=note
            )
    except IntegrityError as exc:
        _word_outcome_refusal(exc)
        raise
    logger.info("check returned", extra=log_extra(task_id=task_id, reviewer=user.pk))
    return outcome


def record_qa_review(
    *,
    task_id: int,
    user: User,
    lease_token: uuid.UUID | str,
    verdict: str,
    reason_code: str,
    note: str = "",
    queue_id: int | None = None,
) -> LaneOutcome:
    """Record a blind QA verdict; a disagreeing verdict opens an adjudication task."""
    token = parse_token(lease_token)
    if verdict not in QA_VERDICTS:
        raise InvalidVerdict("A QA review approves or rejects.")
    if not reason_code or "\x00" in reason_code:
        raise InvalidReason(QA_REASON_REFUSED)
    _note(note)
    if not _may_work_lanes(user):
        raise NotPermitted("You do not have access to this lane.")
    try:
        with transaction.atomic():
            row = _lock(
                task_id=task_id, queue_id=queue_id, kind=LaneKind.QA, user=user, token=token
            )
            outcome = _finish(
                lanes_sql.RECORD_QA_REVIEW,
                row=row,
                user=user,
                result=LaneResult.REVIEWED,
                verdict=verdict,
                reason_code=reason_code,
                note=note,
            )
    except IntegrityError as exc:
        _word_outcome_refusal(exc)
        raise
    logger.info(
        "qa reviewed",
        extra=log_extra(task_id=task_id, agrees=outcome.agrees_verdict, reviewer=user.pk),
    )
    return outcome


def adjudicate(
    *,
    task_id: int,
    user: User,
    lease_token: uuid.UUID | str,
    uphold: bool = False,
    close: bool = False,
    reason_code: str = "",
    note: str = "",
    queue_id: int | None = None,
) -> LaneOutcome:
    """Settle a QA disagreement: uphold the original, overturn it, or close it.

    The overturn leaves the QA reviewer's verdict standing, with the adjudicator's reason
    (an overturn reason of the queue); it goes through services.overturn_decision, so four
    eyes, the supersede chain and the outbox apply as to any overturn. An adjudication whose
    decision an overturn in force replaced since it was drawn for QA is closed, and only such a one
    (the laneoutcome_adjudication_stands trigger): nothing it wrote would change the outcome.
    """
    token = parse_token(lease_token)
    _note(note)
    if not user.is_authenticated or not user.has_perm("queue_app.can_overturn"):
        raise NotPermitted("Adjudication needs the permission to overturn decisions.")
    try:
        with transaction.atomic():
            row = _lock(
                task_id=task_id,
                queue_id=queue_id,
                kind=LaneKind.ADJUDICATION,
                user=user,
                token=token,
            )
            # Asked here, under the item's lock LOCK_LANE_TASK took, to refuse in words; the
            # outcome's trigger asks again.
            replaced = replaced_by(decision_id=row["decision_id"])
            if replaced is not None and not close:
                raise InvalidVerdict(no_longer_stands(row["decision_id"], replaced))
            if replaced is None and close:
                raise InvalidVerdict(
                    f"Decision #{row['decision_id']} still stands: uphold it or overturn it. "
                    "Nothing was recorded."
                )
            overturn_id = None
            if not uphold and not close:
                # The QA reviewer's verdict is the one that would stand. An overturn since
                # (AlreadySuperseded) or four eyes (NotPermitted) refuse with their own words.
                qa = LaneOutcome.objects.get(task__adjudication__pk=task_id)
                overturn = overturn_decision(
                    decision_id=row["decision_id"],
                    admin=user,
                    corrected_verdict=qa.verdict,
                    reason_code=reason_code,
                    note=note,
                )
                overturn_id = overturn.pk
            outcome = _finish(
                lanes_sql.FINISH_ADJUDICATION,
                row=row,
                user=user,
                result=(
                    LaneResult.CLOSED
                    if close
                    else LaneResult.UPHELD
                    if uphold
                    else LaneResult.OVERTURNED
                ),
                note=note,
                overturn_id=overturn_id,
            )
    except IntegrityError as exc:
        _word_outcome_refusal(exc)
        raise
    logger.info(
        "adjudicated", extra=log_extra(task_id=task_id, result=outcome.result, reviewer=user.pk)
    )
    return outcome


def lanes_for_user(*, user: User, queue_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """The lanes a user may work, per queue, with their backlog (for the console's home).

    queue_ids: the queues the user reviews, when the caller has read them already. One
    statement (lanes_sql.LANES_FOR_USER). A lane is listed when it has work, or when it is set
    up (a check policy, a QA rate); adjudication only when there is something to settle.
    """
    if not user.is_authenticated:
        return []
    if queue_ids is None:
        queue_ids = list(queues_for_user(user=user).values_list("pk", flat=True))
    rows = fetch_dicts(
        lanes_sql.LANES_FOR_USER,
        {"owner_id": user.pk, "queue_ids": queue_ids},
    )
    return [
        {
            "queue": {"pk": r["queue_id"], "slug": r["slug"], "name": r["name"]},
            "kind": r["kind"],
            "name": LANE_NAMES[LaneKind(r["kind"])],
            "open": r["open"],
            "leased": r["leased"],
            "oldest": r["oldest"],
        }
        for r in rows
        if r["open"] or r["configured"]
    ]


def lane_task_for(*, task_id: int, user: User) -> LaneTask | None:
    """The task with its decision, item and outcome, if the user may see it."""
    task = (
        LaneTask.objects.select_related(
            "queue", "item", "decision__reason_code", "decision__reviewer", "lease_owner"
        )
        .filter(pk=task_id)
        .first()
    )
    if task is None or task.kind not in user_lane_kinds(user=user):
        return None
    if (
        task.kind not in (LaneKind.ADJUDICATION, LaneKind.APPEAL)
        and not queues_for_user(user=user).filter(pk=task.queue_id).exists()
    ):
        return None
    return task


__all__ = [
    "LANE_NAMES",
    "adjudicate",
    "claim_lane_task",
    "confirm_check",
    "lane_task_for",
    "lanes_for_user",
    "record_qa_review",
    "release_lane_task",
    "renew_lane_task",
    "return_check",
    "user_lane_kinds",
]
