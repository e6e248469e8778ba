"""The outbox as operators touch it: putting dead effect jobs, statement deliveries and appeal
outcome notices back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.db.models.functions import Now

from queue_app.db.runner import wake_apply_workers_after_commit
from queue_app.models import AppealNotice, EffectJob, StatementDelivery
from queue_app.services._common import User, log_extra, logger
from queue_app.services.access import hold_permission


def retry_effect_jobs(*, decision_ids: Iterable[int], operator: User) -> int:
    """Put dead effect jobs back in line for the apply worker; return how many were dead.

    One transaction, refused whole (PermissionDenied, nothing changed) unless the operator
    holds change_effectjob as the database reads it there, not only in the cached has_perm.
    """
    revived = 0
    with transaction.atomic():
        hold_permission(
            user=operator,
            perm="queue_app.change_effectjob",
            refusal="Retrying an effect job needs permission to change effect jobs. "
            "Nothing was retried.",
        )
        for decision_id in decision_ids:
            if EffectJob.objects.filter(
                decision_id=decision_id, dead=True, done_at__isnull=True
            ).update(dead=False, attempts=0, next_attempt_at=Now()):
                revived += 1
                logger.info(
                    "effect job retried by operator",
                    extra=log_extra(decision_id=decision_id, reviewer=operator.pk),
                )
        if revived:
            # Wake idle workers now rather than at their next poll.
            wake_apply_workers_after_commit()
    return revived


def retry_statement_deliveries(*, delivery_ids: Iterable[int], operator: User) -> int:
    """Put dead statement deliveries back in line; return how many were dead.

    The statement is sent as it was built (statements are append-only): a retry helps when the
    receiver or its configuration was at fault, or the contract's reading changed; a statement
    whose own fields are wrong is corrected by an overturn, whose statement has a PUID of its own.
    """
    return _revive_dead(
        StatementDelivery.objects.filter(pk__in=list(delivery_ids)),
        operator=operator,
        perm="queue_app.change_statementdelivery",
        refusal="Retrying a statement delivery needs permission to change statement "
        "deliveries. Nothing was retried.",
        logged="statement deliveries retried by operator",
    )


def retry_appeal_notices(*, appeal_ids: Iterable[int], operator: User) -> int:
    """Put the dead outcome notices of these appeals back in line; return how many were dead.

    The notice is rendered from the appeal's outcome when sent, with the same idempotency key
    (appeal_delivery.idempotency_key): a platform that received it before keeps the first.
    Refused whole (PermissionDenied, nothing changed) unless the operator holds
    change_appealnotice as the database reads it in this transaction.
    """
    return _revive_dead(
        AppealNotice.objects.filter(appeal_id__in=list(appeal_ids)),
        operator=operator,
        perm="queue_app.change_appealnotice",
        refusal="Retrying an appeal outcome notice needs permission to change appeal "
        "outcome notices. Nothing was retried.",
        logged="appeal outcome notices retried by operator",
    )


def _revive_dead(
    jobs: QuerySet[Any], *, operator: User, perm: str, refusal: str, logged: str
) -> int:
    """Put the dead, undone jobs among these back in line, at once and from their first
    attempt; return how many. Refused whole unless the operator holds perm as the database
    reads it in this transaction."""
    with transaction.atomic():
        hold_permission(user=operator, perm=perm, refusal=refusal)
        revived = jobs.filter(dead=True, done_at__isnull=True).update(
            dead=False, attempts=0, next_attempt_at=Now()
        )
        if revived:
            logger.info(logged, extra=log_extra(count=revived, reviewer=operator.pk))
            wake_apply_workers_after_commit()
    return revived
