"""Deliver statements of reasons through the outbox: the notice, and the Transparency Database.

A statement's delivery jobs (StatementDelivery) are written in the transaction that builds it
(services/statements.record_statement): a notice to the affected person for every statement, and
a Transparency Database submission for a restriction the contract accepts. A statement the
contract refuses never goes to the database; it shows as failing on /ops/ and in the admin.

The apply worker drains both after its effect jobs (run_apply_worker). Each drain is one
transaction: it claims due jobs FOR UPDATE SKIP LOCKED (two workers never hold one job), sends,
and marks them done or failed before committing. A worker killed after sending and before the
commit leaves the jobs due, and the next worker sends again with the same idempotency key, the
statement's PUID: at-least-once sending, exactly-once effect at a receiver that honours the key
(the upstream platform dedupes on Idempotency-Key; the Transparency Database refuses a PUID it
holds, which the submitter reads as delivered).
"""

from __future__ import annotations

import logging
import os
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop

from queue_app import effects
from queue_app.apply import ERROR_MAX_LENGTH, RetryPolicy
from queue_app.datetimes import add_months
from queue_app.errors import EffectError, PermanentEffectError
from queue_app.jsonutil import exact_dumps
from queue_app.models import DeliveryChannel, StatementDelivery, StatementOfReasons
from queue_app.transparency import contract, submitter

logger = logging.getLogger("queue_app.delivery")

NOTICE_EVENT = "review.statement_notice"
# The Transparency Database call runs inside the claiming transaction: well under the apply
# worker's idle-in-transaction budget (run_apply_worker.SESSION_SETTINGS), so a slow answer
# fails as "no answer" (retried through existing_puids) instead of losing the connection.
TDB_TIMEOUT = 20.0
RESTRICTION_FIELDS = (
    "decision_visibility",
    "decision_visibility_other",
    "decision_monetary",
    "decision_monetary_other",
    "decision_provision",
    "decision_account",
)
GROUND_FIELDS = (
    "decision_ground",
    "illegal_content_legal_ground",
    "illegal_content_explanation",
    "incompatible_content_ground",
    "incompatible_content_explanation",
    "incompatible_content_illegal",
    "decision_ground_reference_url",
)


# The words contract_label gives a notice's restrictions and automation, marked for the
# translation catalogue (locale/<language>/LC_MESSAGES/django.po) and translated as the notice is
# rendered; a value outside them stays in English.
NOTICE_WORDS = (
    gettext_noop("Content removed"),
    gettext_noop("Content disabled"),
    gettext_noop("Content demoted"),
    gettext_noop("Content age restricted"),
    gettext_noop("Content interaction restricted"),
    gettext_noop("Content labelled"),
    gettext_noop("Other"),
    gettext_noop("Suspension"),
    gettext_noop("Termination"),
    gettext_noop("Partial suspension"),
    gettext_noop("Total suspension"),
    gettext_noop("Partial termination"),
    gettext_noop("Total termination"),
    gettext_noop("Suspended"),
    gettext_noop("Terminated"),
    gettext_noop("Fully"),
    gettext_noop("Partially"),
    gettext_noop("Not automated"),
    gettext_noop("Yes"),
    gettext_noop("No"),
)


def appeal_until(statement: StatementOfReasons) -> date:
    """Return the last day the affected person may appeal the statement's decision."""
    policy = statement.decision.queue.statement_policy
    return add_months(timezone.localdate(statement.created_at), policy.appeal_window_months)


# -- the notice ----------------------------------------------------------------------------------


def notice(statement: StatementOfReasons) -> dict[str, Any]:
    """Return the notice to the affected person: JSON, with its text and HTML renderings."""
    decision = statement.decision
    item = decision.item
    policy = decision.queue.statement_policy
    body = statement.statement
    restriction = {key: body[key] for key in RESTRICTION_FIELDS if key in body}
    ground = {key: body[key] for key in GROUND_FIELDS if key in body}
    end_dates = {key: value for key, value in body.items() if key.startswith("end_date_")}
    until = appeal_until(statement)
    message: dict[str, Any] = {
        "type": NOTICE_EVENT,
        "puid": statement.puid,
        "kind": statement.kind,
        "replaces_puid": statement.replaces.puid if statement.replaces else None,
        "decision_id": decision.pk,
        "item_id": item.pk,
        "item_subject": item.subject,
        "queue": decision.queue.slug,
        "trace_id": str(item.trace_id),
        "restriction": restriction,
        "territorial_scope": body.get("territorial_scope", []),
        "start_date": body.get("application_date"),
        "end_dates": end_dates,
        "facts": body.get("decision_facts", ""),
        "ground": ground,
        "automated_detection": body.get("automated_detection"),
        "automated_decision": body.get("automated_decision"),
        "appeal": {"until": until.isoformat(), "window_months": policy.appeal_window_months},
        "out_of_court_settlement": policy.out_of_court_settlement,
    }
    values = [
        v for value in restriction.values() for v in (value if isinstance(value, list) else [value])
    ]
    # The deployment's notice language (REVIEW_NOTICE_LANGUAGE), else the worker's active one.
    language = (
        settings.REVIEW_NOTICE_LANGUAGE or translation.get_language() or settings.LANGUAGE_CODE
    )
    with translation.override(language):
        context = {
            "kind": statement.kind,
            "puid": statement.puid,
            "replaces_puid": message["replaces_puid"],
            "subject": item.subject,
            "restrictions": [gettext(contract_label(value)) for value in values],
            "territorial_scope": message["territorial_scope"],
            "start_date": message["start_date"],
            "end_date": min(end_dates.values()) if end_dates else "",
            "ground": ground.get("illegal_content_legal_ground")
            or ground.get("incompatible_content_ground", ""),
            "reference_url": ground.get("decision_ground_reference_url", ""),
            "facts": message["facts"],
            "automated_detection": gettext(contract_label(str(message["automated_detection"]))),
            "automated_decision": gettext(contract_label(str(message["automated_decision"]))),
            "appeal_until": until.isoformat(),
            "out_of_court": policy.out_of_court_settlement,
            "language": language,
        }
        message["language"] = language
        message["text"] = render_to_string("notices/statement.txt", context, using="django").strip()
        message["html"] = render_to_string(
            "notices/statement.html", context, using="django"
        ).strip()
    return message


def contract_label(value: str) -> str:
    """Return an enumeration value in words (CONTENT_REMOVED: Content removed)."""
    for prefix in (
        "DECISION_VISIBILITY_",
        "DECISION_MONETARY_",
        "DECISION_PROVISION_",
        "DECISION_ACCOUNT_",
        "AUTOMATED_DECISION_",
    ):
        if value.startswith(prefix):
            value = value[len(prefix) :]
            break
    return value.replace("_", " ").capitalize()


def send_notice(statement: StatementOfReasons) -> dict[str, Any]:
    """POST the signed notice to the queue's upstream webhook, keyed by the statement's PUID."""
    queue = statement.decision.queue
    if not queue.webhook_url:
        raise PermanentEffectError(
            f"Queue {queue.slug!r} has no webhook URL to send statement notices to; set one "
            "(and webhook_secret_env), then retry the delivery."
        )
    secret = effects._webhook_secret(queue.slug, queue.webhook_secret_env)
    body = exact_dumps(notice(statement), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        # The same on every attempt: the receiver keeps the first and ignores the rest.
        "Idempotency-Key": statement.puid,
        effects.SIGNATURE_HEADER: "sha256=" + effects.sign(body, secret),
        "User-Agent": "review-console-apply-worker",
    }
    status = effects._post(queue.webhook_url, body, headers)
    if 200 <= status < 300:
        return {"status": status}
    if status >= 500 or status in effects.TRANSIENT_STATUSES:
        raise EffectError(f"The notice webhook answered HTTP {status}; will retry.")
    raise PermanentEffectError(f"The notice webhook refused the notice with HTTP {status}.")


def _due(channel: str, limit: int) -> list[StatementDelivery]:
    # In order per item: a statement's delivery waits while the one of the statement it
    # replaces is not done on the same channel (retrying, or in another worker's open
    # transaction), so the platform never hears "lifted" before the restriction it lifts.
    # On the notice channel a dead earlier notice blocks too, until an operator retries it:
    # the affected person must not be told a restriction was lifted, or replaced, before being
    # told of it. The Transparency Database keeps no order between statements (each is a
    # record of its own, the replacement naming nothing of the earlier one), so there a dead
    # earlier submission (refused for good) does not hold back the one that corrects it;
    # one still retrying is waited for, keeping the database's record in the order decided.
    earlier = StatementDelivery.objects.filter(
        statement_id=OuterRef("statement__replaces_id"), channel=channel, done_at__isnull=True
    )
    if channel == DeliveryChannel.TRANSPARENCY_DATABASE:
        earlier = earlier.filter(dead=False)
    rows: QuerySet[StatementDelivery] = (
        StatementDelivery.objects.select_for_update(skip_locked=True, of=("self",))
        .exclude(Exists(earlier))
        .filter(
            channel=channel, done_at__isnull=True, dead=False, next_attempt_at__lte=timezone.now()
        )
        .select_related(
            "statement__decision__queue__statement_policy",
            "statement__decision__item",
            "statement__replaces",
        )
        .order_by("next_attempt_at", "pk")
    )
    return list(rows[:limit])


def deliver_notices(*, batch_size: int = 10, policy: RetryPolicy | None = None) -> int:
    """Send up to batch_size due notices in one transaction; return how many were attempted."""
    policy = policy or RetryPolicy()
    with transaction.atomic():
        jobs = _due(DeliveryChannel.NOTICE, batch_size)
        for job in jobs:
            try:
                receipt = send_notice(job.statement)
            except Exception as exc:
                _failed(
                    job,
                    f"{type(exc).__name__}: {exc}",
                    policy=policy,
                    permanent=isinstance(exc, PermanentEffectError),
                )
                continue
            _done(job, receipt)
    return len(jobs)


# -- the Transparency Database -------------------------------------------------------------------


def tdb_configured() -> bool:
    """Whether this deployment submits to a Transparency Database (REVIEW_TDB_URL)."""
    return bool(settings.REVIEW_TDB_URL)


def submit_statements(*, policy: RetryPolicy | None = None, check_locally: bool = True) -> int:
    """Submit up to 100 due statements in one call; return how many were attempted.

    The claim holds the rows until the answers are recorded, so two workers never send one
    statement; a lost 201 leaves them due, and the retry learns from existing_puids. Without
    `check_locally` every statement goes to the database and its own 422 says what it refuses
    (the tests use it; the worker checks first, and sends nothing the contract refuses).
    """
    if not tdb_configured():
        return 0
    policy = policy or RetryPolicy()
    with transaction.atomic():
        jobs = _due(DeliveryChannel.TRANSPARENCY_DATABASE, contract.MAX_BATCH)
        if not jobs:
            return 0
        attempt = min(job.attempts for job in jobs)
        result = submitter.submit(
            [job.statement.statement for job in jobs],
            base_url=settings.REVIEW_TDB_URL,
            token_env=settings.REVIEW_TDB_TOKEN_ENV,
            attempt=attempt,
            timeout=TDB_TIMEOUT,
            check_locally=check_locally,
        )
        for job in jobs:
            puid = job.statement.puid
            outcome = result.outcome(puid)
            if outcome == "delivered":
                stored = result.delivered[puid] or {}
                receipt = {k: stored[k] for k in ("uuid", "permalink", "created_at") if k in stored}
                _done(job, receipt or {"existing_puid": True})
            elif outcome == "rejected":
                _failed(
                    job,
                    "The Transparency Database refused it:\n" + result.explain(puid),
                    policy=policy,
                    permanent=True,
                )
            else:
                delay = timedelta(seconds=result.retry_after) if result.retry_after else None
                _failed(
                    job,
                    result.explain(puid) or result.detail,
                    policy=policy,
                    permanent=False,
                    delay=delay,
                )
    logger.info("statements submitted", extra={"count": len(jobs), "detail": result.detail})
    return len(jobs)


# -- bookkeeping ----------------------------------------------------------------------------------


def _done(job: StatementDelivery, receipt: dict[str, Any]) -> None:
    job.attempts += 1
    job.done_at = timezone.now()
    job.receipt = receipt
    job.last_error = ""
    job.save(update_fields=["attempts", "done_at", "receipt", "last_error"])


def _failed(
    job: StatementDelivery,
    error: str,
    *,
    policy: RetryPolicy,
    permanent: bool,
    delay: timedelta | None = None,
) -> None:
    job.attempts += 1
    job.last_error = error[:ERROR_MAX_LENGTH]
    job.dead = permanent or job.attempts >= policy.max_attempts
    if not job.dead:
        job.next_attempt_at = timezone.now() + (delay or policy.delay(job.attempts))
    job.save(update_fields=["attempts", "last_error", "dead", "next_attempt_at"])
    log = logger.error if job.dead else logger.warning
    transaction.on_commit(
        lambda: log(
            "statement delivery dead; an operator must retry it"
            if job.dead
            else "statement delivery failed; will retry",
            extra={
                "statement_id": job.statement_id,
                "channel": job.channel,
                "error": job.last_error,
            },
        )
    )


def token_configured() -> bool:
    """Whether the Transparency Database token variable is set (never its value)."""
    return bool(os.environ.get(settings.REVIEW_TDB_TOKEN_ENV, ""))
