"""Statements of reasons: built once, when a restricting decision's outcome becomes final.

The apply worker carries a decision out exactly when it is final (after its check, if the queue
needs one; an overturn has its own job) and records it applied in a savepoint of its batch.
record_statement runs in that savepoint, so the statement commits with the applied mark or not
at all: a retried or killed worker never builds one twice, and the unique decision column says
so again in the database. A statement the contract refuses is stored all the same, with its
errors, for an operator to see; it is never a reason for the worker to stop.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.utils import timezone

from queue_app.jsonutil import exact_dumps
from queue_app.models import (
    ApiClient,
    Decision,
    DeliveryChannel,
    LaneOutcome,
    Queue,
    ReasonMapping,
    StatementDelivery,
    StatementKind,
    StatementOfReasons,
    StatementPolicy,
    SuggestionView,
)
from queue_app.services._common import log_extra, logger
from queue_app.transparency import compose
from queue_app.transparency.contract import validate_statement
from queue_app.transparency.redaction import evidence_values

#: The facts a sample statement is built from at save time: no item, no person.
SAMPLE_NOTE = "The reviewer's note."


def canonical_json(statement: dict[str, Any]) -> str:
    """Return the statement as sent: sorted keys, no spaces, exact numbers."""
    return exact_dumps(statement, sort_keys=True)


def statement_sha256(body: str) -> str:
    """Return the sha256 of a statement's canonical JSON."""
    return hashlib.sha256(body.encode()).hexdigest()


# -- at save time -------------------------------------------------------------------------------


def sample_statement(
    *, policy: StatementPolicy, mapping: ReasonMapping, queue_slug: str, reason_label: str
) -> dict[str, Any]:
    """Return the statement a decision with this policy and mapping would get today."""
    today = timezone.now().date()
    facts = compose.Facts(
        queue=queue_slug,
        decision_id=1,
        item_id=1,
        reason_code="sample",
        reason_label=reason_label,
        note=SAMPLE_NOTE,
        application_date=today,
        content_date=today,
        automated_detection=False,
        automated_decision=compose.NOT_AUTOMATED,
    )
    return compose.restriction_statement(policy, mapping, facts)


def sample_errors(
    *, policy: StatementPolicy, mapping: ReasonMapping, queue_slug: str, reason_label: str
) -> dict[str, list[str]]:
    """Return the contract's refusals of a sample statement (field -> reasons); empty: fine."""
    try:
        statement = sample_statement(
            policy=policy, mapping=mapping, queue_slug=queue_slug, reason_label=reason_label
        )
    except compose.TemplateError as exc:
        return {"template": [str(exc)]}
    return validate_statement(statement)


def policy_errors(*, policy: StatementPolicy, queue: Queue) -> dict[str, list[str]]:
    """Return the contract's refusals of the statements a policy would give the queue's mapped
    reasons (a neutral mapping when it has none yet)."""
    mappings = list(
        ReasonMapping.objects.filter(queue=queue).select_related("reason_code").order_by("pk")
    )
    if not mappings:
        neutral = ReasonMapping(
            decision_ground=compose.INCOMPATIBLE,
            ground="The terms of service.",
            category="STATEMENT_CATEGORY_OTHER_VIOLATION_TC",
        )
        return sample_errors(
            policy=policy, mapping=neutral, queue_slug=queue.slug, reason_label="A reason"
        )
    errors: dict[str, list[str]] = {}
    for mapping in mappings:
        found = sample_errors(
            policy=policy,
            mapping=mapping,
            queue_slug=queue.slug,
            reason_label=mapping.reason_code.label,
        )
        for field, reasons in found.items():
            for reason in reasons:
                if reason not in errors.setdefault(field, []):
                    errors[field].append(reason)
    return errors


# -- in the apply worker ------------------------------------------------------------------------


def record_statement(*, decision: Decision) -> StatementOfReasons | None:
    """Build and store the statement of a decision being applied now; None if it needs none.

    Runs inside the apply worker's savepoint for the decision (queue_app/apply.py).
    """
    policy = _policy_of(decision)
    if policy is None or not policy.restricts:
        return None
    replaced = _replaced_statement(decision)
    if decision.standing_verdict == policy.restricting_verdict:
        kind = StatementKind.RESTRICTION
    elif replaced is not None and replaced.kind == StatementKind.RESTRICTION:
        kind = StatementKind.LIFTED
    else:
        return None
    facts = _facts(decision, policy)
    errors: dict[str, list[str]]
    if kind == StatementKind.LIFTED:
        assert replaced is not None
        statement = compose.lifted_statement(policy, facts, replaces_puid=replaced.puid)
        errors = {}
    else:
        mapping = ReasonMapping.objects.filter(reason_code_id=decision.reason_code_id).first()
        statement, errors = _restriction(policy, mapping, facts)
    body = canonical_json(statement)
    row = StatementOfReasons.objects.create(
        decision=decision,
        kind=kind,
        replaces=replaced,
        puid=str(statement.get("puid") or f"decision-{decision.pk}"),
        body=body,
        sha256=statement_sha256(body),
        errors=errors,
    )
    _queue_deliveries(row)
    if errors:
        logger.warning(
            "statement of reasons refused by the contract; an operator must fix its mapping",
            extra=log_extra(decision_id=decision.pk, statement_id=row.pk, fields=sorted(errors)),
        )
    return row


def _queue_deliveries(row: StatementOfReasons) -> None:
    """Write the statement's outbox jobs with it: the notice to the affected person, and the
    Transparency Database submission for a restriction. A statement the contract refused gets
    neither (a notice without its ground would not be a statement of reasons): it shows as
    failing until its mapping is fixed, and the next decision gets a good one."""
    if row.errors:
        return
    now = timezone.now()
    channels = [DeliveryChannel.NOTICE]
    if row.kind == StatementKind.RESTRICTION:
        channels.append(DeliveryChannel.TRANSPARENCY_DATABASE)
    StatementDelivery.objects.bulk_create(
        [
            StatementDelivery(statement=row, channel=channel, next_attempt_at=now)
            for channel in channels
        ]
    )


def _restriction(
    policy: StatementPolicy, mapping: ReasonMapping | None, facts: compose.Facts
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    if mapping is None:
        # Built without a ground: the contract names every field missing, and the reason says why.
        statement = {
            "puid": compose.puid(
                policy.puid_template,
                queue=facts.queue,
                decision_id=facts.decision_id,
                item_id=facts.item_id,
            ),
            "application_date": facts.application_date.isoformat(),
        }
        errors = validate_statement(statement)
        errors["reason_code"] = [f"The reason {facts.reason_code} has no statement mapping."]
        return statement, errors
    try:
        statement = compose.restriction_statement(policy, mapping, facts)
    except compose.TemplateError as exc:
        return {"application_date": facts.application_date.isoformat()}, {"template": [str(exc)]}
    return statement, validate_statement(statement)


def _policy_of(decision: Decision) -> StatementPolicy | None:
    # Read with the decision by the apply worker's claim (select_related), else looked up.
    try:
        return decision.queue.statement_policy
    except ObjectDoesNotExist:
        return None


def _replaced_statement(decision: Decision) -> StatementOfReasons | None:
    if decision.supersedes_id is None:
        return None
    return StatementOfReasons.objects.filter(decision_id=decision.supersedes_id).first()


def _facts(decision: Decision, policy: StatementPolicy) -> compose.Facts:
    item = decision.item
    payload = compose.without_overrides(item.payload)
    return compose.Facts(
        queue=decision.queue.slug,
        decision_id=decision.pk,
        item_id=item.pk,
        reason_code=decision.reason_code.code,
        reason_label=decision.reason_code.label,
        note=decision.note,
        application_date=timezone.now().astimezone(UTC).date(),
        content_date=_content_date(item, policy),
        automated_detection=item.created_by_client_id is not None,
        automated_decision=automated_decision(decision),
        evidence=tuple(
            evidence_values(subject=item.subject, subject_key=item.subject_key, payload=payload)
        ),
        overrides=compose.overrides_of(item.payload),
    )


def _content_date(item: Any, policy: StatementPolicy) -> date:
    if policy.content_date_key and isinstance(item.payload, dict):
        given = item.payload.get(policy.content_date_key)
        if isinstance(given, str):
            try:
                return date.fromisoformat(given[:10])
            except ValueError:
                pass
    return item.created_at.astimezone(UTC).date()


def automated_decision(decision: Decision) -> str:
    """Return who decided, in the contract's words: a person, a machine, or a person confirming
    a machine's decision in the check lane."""
    machine = decision.suggestion_view == SuggestionView.AUTOMATIC or _is_api_client(
        decision.reviewer_id
    )
    if not machine:
        return compose.NOT_AUTOMATED
    confirmers = LaneOutcome.objects.filter(
        task__decision_id=decision.pk, task__kind="check", result="confirmed"
    ).values_list("actor_id", flat=True)
    if any(not _is_api_client(actor) for actor in confirmers):
        return compose.PARTIALLY
    return compose.FULLY


def _is_api_client(user_id: int) -> bool:
    return ApiClient.objects.filter(user_id=user_id).exists()
