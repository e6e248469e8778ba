"""The second-person lanes in the console: Next check / QA / adjudication, and their pages.

Same shape as the review pages (queue_app/console/views.py): fetch with permission, validate,
call one service, redirect; every rule is enforced again by the services and the database.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.contrib import messages
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from queue_app.console.attachment_cards import attachment_cards
from queue_app.console.evidence_display import evidence_view
from queue_app.console.views import (
    Refusal,
    _queue_for,
    case_context,
    console_view,
    heartbeat_refused,
    heartbeat_renewed,
    post_only,
    wants_json,
)
from queue_app.errors import (
    AlreadySuperseded,
    EvidenceChanged,
    InvalidBounds,
    InvalidReason,
    InvalidVerdict,
    NotPermitted,
    ReviewError,
    StaleLease,
)
from queue_app.evidence import item_evidence_hash
from queue_app.forms import (
    AdjudicationForm,
    AppealForm,
    LeaseForm,
    QaReviewForm,
    ReturnForm,
    form_errors,
)
from queue_app.models import LaneKind, LaneState, LaneTask, Queue, ReasonCode
from queue_app.rules import warnings_for
from queue_app.second_person import QA_VERDICTS
from queue_app.services import (
    adjudicate,
    claim_lane_task,
    confirm_check,
    lane_task_for,
    overturn_of,
    record_qa_review,
    release_lane_task,
    renew_lane_task,
    replaced_by,
    return_check,
    user_lane_kinds,
)
from queue_app.services.appeals import appeal_of_task, decide_appeal, returned_reversal
from queue_app.services.blindness import is_blind_to
from queue_app.services.lanes import LANE_NAMES

NO_SUCH_TASK = "There is no such task, or it is in a lane you do not work."
NOTHING: dict[str, str] = {
    LaneKind.CHECK: "no decision is waiting for a check",
    LaneKind.QA: "nothing is waiting for a QA review",
    LaneKind.ADJUDICATION: "no QA disagreement is waiting",
    LaneKind.APPEAL: "no appeal is waiting",
}


def _lane_queue(request: HttpRequest, slug: str, kind: str) -> Queue:
    if kind not in LaneKind.values or kind not in user_lane_kinds(user=request.user):
        raise Refusal(403, "You do not work this lane.")
    if kind in (LaneKind.ADJUDICATION, LaneKind.APPEAL):
        queue = Queue.objects.filter(slug=slug).first()
        if queue is None:
            raise Refusal(404, "There is no such queue.")
        return queue
    return _queue_for(request, slug)


def _task_for(request: HttpRequest, task_id: int) -> LaneTask:
    task = lane_task_for(task_id=task_id, user=request.user)
    if task is None:
        raise Refusal(404, NO_SUCH_TASK)
    return task


@post_only
@console_view
def lane_next(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    """Lease the oldest task of the queue's lane to me (or give back the one I hold)."""
    queue = _lane_queue(request, slug, kind)
    task = claim_lane_task(queue=queue, kind=kind, user=request.user)
    if task is None:
        messages.info(request, f"{queue.name} {LANE_NAMES[kind]}: {NOTHING[kind]} for you.")
        return redirect("home")
    return redirect("lane-task", task_id=task.pk)


@require_GET
@console_view
def lane_task(request: HttpRequest, task_id: int) -> HttpResponse:
    """A check, QA or adjudication page: the evidence, and what this lane may show."""
    task = _task_for(request, task_id)
    return render(request, "console/lane_task.html", _context(request, task))


def _context(request: HttpRequest, task: LaneTask, **more: Any) -> dict[str, Any]:
    now = timezone.now()
    item = task.item
    mine = (
        task.state == LaneState.OPEN
        and task.lease_owner_id == request.user.pk
        and task.lease_expires is not None
    )
    decision = task.decision
    # Blind QA (services/blindness.py): a QA task's page never shows the decision it samples,
    # and no lane page of an item shows it to whoever holds that item's QA review.
    blind = task.kind == LaneKind.QA or is_blind_to(user=request.user, item_id=task.item_id)
    context: dict[str, Any] = {
        "title": f"{LANE_NAMES[task.kind]}: {item.subject}",
        "task": task,
        "item": item,
        "queue": task.queue,
        "lane_name": LANE_NAMES[task.kind],
        "evidence": evidence_view(
            item.payload, warnings_for(item.payload, task.queue.evidence_rules.all())
        ),
        # The documents are part of what is confirmed or judged (they are in the evidence hash).
        "attachments": attachment_cards(request, item),
        "mine": mine,
        "lease_token": task.lease_token if mine else None,
        "expires_in": (
            int(max((task.lease_expires - now).total_seconds(), 0))
            if mine and task.lease_expires is not None  # mine says it is set
            else 0
        ),
        "ttl_seconds": int(task.queue.lease_ttl.total_seconds()),
        # The first verdict, reason, note and reviewer are not in the context at all when
        # blind (so no template slip can show them).
        "decision": None if blind else decision,
        "evidence_changed": (
            task.kind == LaneKind.CHECK and item_evidence_hash(item) != decision.evidence_hash
        ),
        "outcome": getattr(task, "outcome", None),
        **more,
    }
    # The same case header as the item page; a blind reviewer is told nobody's name in it.
    context.update(case_context(request, item, evidence=context["evidence"], blind=blind))
    if task.kind == LaneKind.QA and mine:
        context["verdicts"] = [(v, v.title()) for v in QA_VERDICTS]
        context["reasons"] = _qa_reasons(task)
    if task.kind == LaneKind.ADJUDICATION and not blind:
        # An adjudication always has its source: a check constraint on the task says so.
        source_id = cast(int, task.source_id)
        source = LaneTask.objects.select_related("outcome__reason_code").get(pk=source_id)
        context["qa"] = source.outcome
        # What became of the decision since the QA review: replaced by an overturn in force
        # (the adjudication can only be closed), or with an overturn awaiting its check.
        context["replaced_by"] = replaced_by(decision_id=task.decision_id)
        context["overturn_awaiting"] = (
            None if context["replaced_by"] else overturn_of(decision_id=task.decision_id)
        )
        if mine:
            context["overturn_reasons"] = _overturn_reasons(task)
    if task.kind == LaneKind.APPEAL:
        # Side by side: the evidence (above), the decision appealed and its statement of
        # reasons, and the complaint. The statement is shown as sent to the affected person.
        appeal = appeal_of_task(task=task)
        context["appeal"] = appeal
        context["statement"] = appeal.statement if appeal else None
        context["replaced_by"] = replaced_by(decision_id=task.decision_id)
        context["overturn_awaiting"] = (
            None if context["replaced_by"] else overturn_of(decision_id=task.decision_id)
        )
        context["decision"] = decision
        # A reversal whose overturn its checker returned: not final, its notice held.
        context["reversal_returned"] = returned_reversal(context["outcome"])
        if mine:
            context["overturn_reasons"] = _overturn_reasons(task)
    if (
        context["outcome"] is not None
        and task.kind == LaneKind.QA
        and not is_blind_to(user=request.user, item_id=task.item_id)
    ):
        # Once the QA review is recorded, the reviewer may see what they were compared with.
        context["decision"] = decision
    return context


def _qa_reasons(task: LaneTask) -> list[ReasonCode]:
    """The reasons a QA review of the task may give: the queue's active approve and reject."""
    return list(
        ReasonCode.objects.filter(
            queue_id=task.queue_id, verdict__in=QA_VERDICTS, retired_at__isnull=True
        ).order_by("verdict", "label")
    )


def _overturn_reasons(task: LaneTask) -> list[ReasonCode]:
    """The reasons an adjudication may overturn with: the queue's active overturn reasons."""
    return list(
        ReasonCode.objects.filter(
            queue_id=task.queue_id, verdict="overturn", retired_at__isnull=True
        ).order_by("label")
    )


def _again(
    request: HttpRequest, task: LaneTask, message: str, form: Form, status: int = 400
) -> HttpResponse:
    """The task's page again with the message, and the note as typed (less any NUL)."""
    messages.error(request, message)
    note = str(form.data.get("note", "")).replace("\x00", "")
    return render(
        request,
        "console/lane_task.html",
        _context(request, task, note=note, form=form),
        status=status,
    )


def _next_in_lane(request: HttpRequest, task: LaneTask) -> HttpResponse:
    # Claiming is a write, so it happens here in the POST, like Next item after a decision.
    try:
        nxt = claim_lane_task(queue=task.queue, kind=task.kind, user=request.user)
    except ReviewError as exc:
        messages.error(request, exc.message)
        return redirect("home")
    if nxt is None:
        messages.info(
            request, f"{task.queue.name} {LANE_NAMES[task.kind]}: {NOTHING[task.kind]} for you."
        )
        return redirect("home")
    return redirect("lane-task", task_id=nxt.pk)


def _finish(
    request: HttpRequest,
    task: LaneTask,
    form: Form,
    write: Callable[[dict[str, Any]], object],
    done: str,
) -> HttpResponse:
    """Run a fenced finish of a valid form; anything refused shows the page again, unwritten."""
    if not form.is_valid():
        return _again(request, task, form_errors(form), form)
    try:
        write(form.cleaned_data)
    except (InvalidReason, InvalidVerdict, InvalidBounds) as exc:
        return _again(request, task, exc.message, form)
    except AlreadySuperseded as exc:
        # An adjudication's overturn while another overturn of the decision awaits its check.
        return _again(request, task, exc.message, form, status=409)
    except StaleLease as exc:
        # Someone else holds or finished the task: show it as it is now.
        return _again(request, _task_for(request, task.pk), exc.message, form, status=409)
    except EvidenceChanged as exc:
        # A confirmation over changed evidence was recorded as a return: show that outcome.
        messages.error(request, exc.message)
        return redirect("lane-task", task_id=task.pk)
    messages.success(request, done)
    return _next_in_lane(request, task)


@post_only
@console_view
def lane_confirm(request: HttpRequest, task_id: int) -> HttpResponse:
    """Confirm the maker's decision: its effect is written now."""
    task = _task_for(request, task_id)
    return _finish(
        request,
        task,
        LeaseForm(request.POST),
        lambda data: confirm_check(
            task_id=task.pk,
            queue_id=task.queue_id,
            user=request.user,
            lease_token=data["lease_token"],
        ),
        f"Confirmed decision #{task.decision_id} on item #{task.item_id}.",
    )


@post_only
@console_view
def lane_return(request: HttpRequest, task_id: int) -> HttpResponse:
    """Return the maker's decision with a note: the item is decided again."""
    task = _task_for(request, task_id)
    return _finish(
        request,
        task,
        ReturnForm(request.POST),
        lambda data: return_check(
            task_id=task.pk,
            queue_id=task.queue_id,
            user=request.user,
            lease_token=data["lease_token"],
            note=data["note"],
        ),
        f"Returned item #{task.item_id} for a new decision.",
    )


@post_only
@console_view
def lane_qa(request: HttpRequest, task_id: int) -> HttpResponse:
    """Record my blind QA verdict and reason."""
    task = _task_for(request, task_id)
    return _finish(
        request,
        task,
        QaReviewForm(request.POST, reasons=_qa_reasons(task)),
        lambda data: record_qa_review(
            task_id=task.pk,
            queue_id=task.queue_id,
            user=request.user,
            lease_token=data["lease_token"],
            verdict=data["verdict"],
            reason_code=data["reason_code"],
            note=data["note"],
        ),
        f"Recorded your QA review of item #{task.item_id}.",
    )


@post_only
@console_view
def lane_adjudicate(request: HttpRequest, task_id: int) -> HttpResponse:
    """Uphold the original decision, or overturn it to the QA verdict."""
    task = _task_for(request, task_id)
    return _finish(
        request,
        task,
        AdjudicationForm(request.POST, reasons=_overturn_reasons(task)),
        lambda data: adjudicate(
            task_id=task.pk,
            queue_id=task.queue_id,
            user=request.user,
            lease_token=data["lease_token"],
            uphold=data["outcome"] == "uphold",
            close=data["outcome"] == "close",
            reason_code=data["reason_code"],
            note=data["note"],
        ),
        f"Adjudicated item #{task.item_id}.",
    )


@post_only
@console_view
def lane_appeal(request: HttpRequest, task_id: int) -> HttpResponse:
    """Decide an appeal: uphold the decision, reverse it (an overturn), or close it."""
    task = _task_for(request, task_id)
    return _finish(
        request,
        task,
        AppealForm(request.POST, reasons=_overturn_reasons(task)),
        lambda data: decide_appeal(
            task_id=task.pk,
            queue_id=task.queue_id,
            user=request.user,
            lease_token=data["lease_token"],
            reverse=data["outcome"] == "reverse",
            close=data["outcome"] == "close",
            corrected_verdict=data["corrected_verdict"],
            reason_code=data["reason_code"],
            reasons=data["note"],
        ),
        f"Decided the appeal on item #{task.item_id}.",
    )


def _token(request: HttpRequest) -> str:
    """The posted lease token of a renew or release (a bad one is a stale lease)."""
    form = LeaseForm(request.POST)
    if not form.is_valid():
        raise StaleLease("This page's lease is not valid any more; open the task again.")
    return str(form.cleaned_data["lease_token"])


@post_only
@console_view
def lane_renew(request: HttpRequest, task_id: int) -> HttpResponse:
    """Extend my lease of a task: JSON for the page's heartbeat, a redirect for a plain post."""
    as_json = wants_json(request)
    try:
        task = _task_for(request, task_id)
    except Refusal as refusal:
        if as_json:
            return heartbeat_refused(refusal.message, refusal.status)
        raise
    try:
        expires = renew_lane_task(
            task_id=task.pk,
            queue_id=task.queue_id,
            user=request.user,
            lease_token=_token(request),
        )
    except NotPermitted as exc:
        if as_json:
            return heartbeat_refused(exc.message, 403)
        raise
    except StaleLease as exc:
        if as_json:
            return heartbeat_refused(exc.message, 409)
        messages.error(request, exc.message)
        return redirect("lane-task", task_id=task.pk)
    if as_json:
        return heartbeat_renewed(expires)
    messages.info(request, f"Your lease of the {LANE_NAMES[task.kind].lower()} task was renewed.")
    return redirect("lane-task", task_id=task.pk)


@post_only
@console_view
def lane_release(request: HttpRequest, task_id: int) -> HttpResponse:
    """Give a task back to its lane."""
    task = _task_for(request, task_id)
    try:
        release_lane_task(
            task_id=task.pk,
            queue_id=task.queue_id,
            user=request.user,
            lease_token=_token(request),
        )
    except StaleLease as exc:
        messages.error(request, exc.message)
        return redirect("lane-task", task_id=task.pk)
    messages.info(request, f"The {LANE_NAMES[task.kind].lower()} task is back in its lane.")
    return redirect("home")
