"""Deliver appeal outcomes to the affected person through the outbox, exactly once.

An appeal's notice (AppealNotice) is written with its outcome (lanes_sql.FINISH_APPEAL). The
apply worker drains them after the statements' notices (run_apply_worker), the way
queue_app/delivery.py drains those: one transaction claims due rows FOR UPDATE SKIP LOCKED,
POSTs each to the queue's webhook (signed, `Idempotency-Key: appeal-<id>-outcome`), and marks
it done or failed before committing. A worker killed between the POST and the commit sends again
with the same key: at-least-once sending, exactly-once effect at a platform that honours the key.

A reversal's notice waits until its overturn took effect (applied by the apply worker) and the
notice of the overturn's own statement of reasons went out: the platform hears "reversed" after
the restriction is lifted and after the statement that says so, never before.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.template.loader import render_to_string
from django.utils import timezone, translation

from queue_app import effects
from queue_app.apply import ERROR_MAX_LENGTH, RetryPolicy
from queue_app.errors import EffectError, PermanentEffectError
from queue_app.jsonutil import exact_dumps
from queue_app.models import (
    AppealNotice,
    AppliedDecision,
    DeliveryChannel,
    LaneOutcome,
    LaneResult,
    StatementDelivery,
    StatementOfReasons,
    StatementPolicy,
)

logger = logging.getLogger("queue_app.delivery")

APPEAL_OUTCOME_EVENT = "review.appeal_outcome"
RESULT_WORDS = {
    LaneResult.UPHELD: "upheld",
    LaneResult.OVERTURNED: "reversed",
    LaneResult.CLOSED: "closed",
}


def idempotency_key(notice: AppealNotice) -> str:
    return f"appeal-{notice.appeal_id}-outcome"


def appeal_notice(notice: AppealNotice) -> dict[str, Any]:
    """Return the outcome notice: JSON, with its text and HTML renderings."""
    appeal = notice.appeal
    outcome = LaneOutcome.objects.get(task_id=appeal.task_id)
    result = RESULT_WORDS[LaneResult(outcome.result)]
    policy = StatementPolicy.objects.filter(queue_id=appeal.queue_id).first()
    new_statement = (
        StatementOfReasons.objects.filter(decision_id=outcome.overturn_id).first()
        if outcome.overturn_id
        else None
    )
    out_of_court = policy.out_of_court_settlement if policy else ""
    message: dict[str, Any] = {
        "type": APPEAL_OUTCOME_EVENT,
        "appeal_id": appeal.pk,
        "reference": appeal.reference,
        "queue": appeal.queue.slug,
        "item_id": appeal.item_id,
        "item_subject": appeal.item.subject,
        "trace_id": str(appeal.item.trace_id),
        "decision_id": appeal.decision_id,
        "statement_puid": appeal.statement.puid if appeal.statement else None,
        "outcome": result,
        "decided_at": outcome.created_at.isoformat(),
        "overturn_id": outcome.overturn_id,
        "corrected_verdict": outcome.verdict or None,
        "new_statement_puid": new_statement.puid if new_statement else None,
        "reasons": outcome.note,
        "further_redress": {
            "out_of_court_settlement": out_of_court,
            "judicial_redress": True,
        },
    }
    context = {
        "result": result,
        "reference": appeal.reference,
        "decision_id": appeal.decision_id,
        "corrected_verdict": outcome.verdict,
        "puid": message["statement_puid"] or "",
        "new_puid": message["new_statement_puid"] or "",
        "reasons": outcome.note,
        "out_of_court": out_of_court,
        "language": translation.get_language() or settings.LANGUAGE_CODE,
    }
    message["language"] = context["language"]
    message["text"] = render_to_string(
        "notices/appeal_outcome.txt", context, using="django"
    ).strip()
    message["html"] = render_to_string(
        "notices/appeal_outcome.html", context, using="django"
    ).strip()
    return message


def send_appeal_notice(notice: AppealNotice) -> dict[str, Any]:
    """POST the signed outcome notice to the queue's upstream webhook, keyed by the appeal."""
    queue = notice.appeal.queue
    if not queue.webhook_url:
        raise PermanentEffectError(
            f"Queue {queue.slug!r} has no webhook URL to send appeal outcomes to; set one "
            "(and webhook_secret_env), then retry the notice."
        )
    secret = effects._webhook_secret(queue.slug, queue.webhook_secret_env)
    body = exact_dumps(appeal_notice(notice), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "Idempotency-Key": idempotency_key(notice),
        effects.SIGNATURE_HEADER: "sha256=" + effects.sign(body, secret),
        "User-Agent": "review-console-apply-worker",
    }
    status = effects._post(queue.webhook_url, body, headers)
    if 200 <= status < 300:
        return {"status": status}
    if status >= 500 or status in effects.TRANSIENT_STATUSES:
        raise EffectError(f"The notice webhook answered HTTP {status}; will retry.")
    raise PermanentEffectError(f"The notice webhook refused the appeal outcome with HTTP {status}.")


def _due(limit: int) -> list[AppealNotice]:
    task = OuterRef("appeal__task_id")
    # A reversal whose overturn has not taken effect yet (awaiting its check, or the worker).
    unapplied = LaneOutcome.objects.filter(task_id=task, overturn__isnull=False).exclude(
        Exists(AppliedDecision.objects.filter(decision_id=OuterRef("overturn_id")))
    )
    # ...or whose own statement's notice has not gone out yet.
    statement_first = StatementDelivery.objects.filter(
        statement__decision__adjudication__task_id=task,
        channel=DeliveryChannel.NOTICE,
        done_at__isnull=True,
    )
    rows: QuerySet[AppealNotice] = (
        AppealNotice.objects.select_for_update(skip_locked=True, of=("self",))
        .exclude(Q(Exists(unapplied)) | Q(Exists(statement_first)))
        .filter(done_at__isnull=True, dead=False, next_attempt_at__lte=timezone.now())
        .select_related("appeal__queue", "appeal__item", "appeal__statement")
        .order_by("next_attempt_at", "pk")
    )
    return list(rows[:limit])


def deliver_appeal_notices(*, batch_size: int = 10, policy: RetryPolicy | None = None) -> int:
    """Send up to batch_size due outcome notices in one transaction; return how many."""
    policy = policy or RetryPolicy()
    with transaction.atomic():
        jobs = _due(batch_size)
        for job in jobs:
            try:
                receipt = send_appeal_notice(job)
            except Exception as exc:
                _failed(job, f"{type(exc).__name__}: {exc}", policy=policy, exc=exc)
                continue
            job.attempts += 1
            job.done_at = timezone.now()
            job.receipt = receipt
            job.last_error = ""
            job.save(update_fields=["attempts", "done_at", "receipt", "last_error"])
    return len(jobs)


def _failed(job: AppealNotice, error: str, *, policy: RetryPolicy, exc: Exception) -> None:
    job.attempts += 1
    job.last_error = error[:ERROR_MAX_LENGTH]
    job.dead = isinstance(exc, PermanentEffectError) or job.attempts >= policy.max_attempts
    if not job.dead:
        job.next_attempt_at = timezone.now() + policy.delay(job.attempts)
    job.save(update_fields=["attempts", "last_error", "dead", "next_attempt_at"])
    dead, appeal_id, last_error = job.dead, job.appeal_id, job.last_error
    transaction.on_commit(
        lambda: (logger.error if dead else logger.warning)(
            "appeal outcome notice dead; an operator must retry it"
            if dead
            else "appeal outcome notice failed; will retry",
            extra={"appeal_id": appeal_id, "error": last_error},
        )
    )
