"""The outbox as operators touch it: putting a dead effect job back in line."""

from __future__ import annotations

from django.db.models.functions import Now

from queue_app.managers import wake_apply_workers_after_commit
from queue_app.models import EffectJob
from queue_app.services._common import User, log_extra, logger


def retry_effect_job(*, decision_id: int, operator: User) -> bool:
    """Put a dead effect job back in line for the apply worker; return whether one was dead."""
    revived = EffectJob.objects.filter(
        decision_id=decision_id, dead=True, done_at__isnull=True
    ).update(dead=False, attempts=0, next_attempt_at=Now())
    if revived:
        # Wake idle workers now rather than at their next poll.
        wake_apply_workers_after_commit()
        logger.info(
            "effect job retried by operator",
            extra=log_extra(decision_id=decision_id, reviewer=operator.pk),
        )
    return bool(revived)
