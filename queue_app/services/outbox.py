"""The outbox as operators touch it: putting a dead effect job back in line."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.models.functions import Now

from queue_app.db.runner import wake_apply_workers_after_commit
from queue_app.models import EffectJob
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
