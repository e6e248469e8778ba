"""Automatic decisions with a person in the loop: the machine decides at intake, people stop it.

A queue with a confidence threshold takes an item's suggestion at or above it as the decision
of its automation user, in the intake's transaction (decide_automatically); maker-checker
policies can still send such a decision to a person's check, and a share of them is drawn for
blind QA. An operator's stop switch, per queue or for all queues, sends everything to people;
the database refuses an automatic decision once a stop has committed (the decision_suggestion
trigger), so the rule lives there and this module only asks.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pghistory
from django.db import IntegrityError, transaction
from django.db.models.functions import Now

from queue_app.db.runner import fetch_instances, wake_apply_workers_after_commit
from queue_app.db.statements import automation as automation_sql
from queue_app.errors import NotPermitted
from queue_app.models import AutomationSwitch, Decision, ItemState, Queue, ReviewItem
from queue_app.second_person import automatic_qa_draw
from queue_app.services._common import User, log_extra, logger

STOP_PERMISSION = "queue_app.can_stop_automation"
NO_STOP_PERMISSION = "Stopping or restarting automatic decisions needs the stop permission."


def decide_automatically(*, item: ReviewItem, queue: Queue) -> Decision | None:
    """Record the new item's suggestion as the queue's automatic decision, if the queue takes it.

    Runs inside the intake's transaction, in a savepoint of its own: when the database refuses
    (a stop committed while this intake ran, a reason code retired since the suggestion was
    checked), that much is rolled back, the item stays pending for people, and the intake
    still succeeds. None: no automatic decision (the item is pending).
    """
    if item.suggestion is None or queue.auto_decide_above is None:
        return None  # nothing to take, or a queue where people decide everything
    params = {
        "item_id": item.pk,
        "queue_id": queue.pk,
        # As numeric whatever its size, like the decide's (DecisionManager.close_and_record).
        "qa_draw": Decimal(automatic_qa_draw(item_id=item.pk)),
    }
    try:
        with transaction.atomic():
            decisions = fetch_instances(Decision, automation_sql.AUTO_DECIDE, params)
    except IntegrityError as exc:
        logger.warning(
            "automatic decision refused; the item waits for people",
            extra=log_extra(item_id=item.pk, queue=queue.slug, why=str(exc).splitlines()[0]),
        )
        return None
    if not decisions:
        return None
    decision = decisions[0]
    if not decision.awaiting_check:  # type: ignore[attr-defined]
        wake_apply_workers_after_commit()  # AUTO_DECIDE queued its effect job
    # What AUTO_DECIDE wrote to the row, known without reading it again: the state follows
    # from the check, and decided_at is the decision's now(), one transaction's clock.
    awaiting = decision.awaiting_check  # type: ignore[attr-defined]
    item.state = ItemState.AWAITING_CHECK if awaiting else ItemState.DECIDED
    item.decided_at = decision.created_at
    logger.info(
        "decided automatically",
        extra=log_extra(
            decision_id=decision.pk,
            item_id=item.pk,
            queue=queue.slug,
            verdict=decision.verdict,
            awaiting_check=decision.awaiting_check,  # type: ignore[attr-defined]
            qa_sampled=decision.qa_sampled,  # type: ignore[attr-defined]
        ),
    )
    return decision


def _require_stop_permission(operator: User) -> None:
    if not (operator.is_authenticated and operator.is_active):
        raise NotPermitted(NO_STOP_PERMISSION)
    if not operator.has_perm(STOP_PERMISSION):
        raise NotPermitted(NO_STOP_PERMISSION)


def _history(operator: User, url: str) -> pghistory.context:
    # /ops/ is outside the access-history middleware's paths: say who pressed here, as the
    # middleware would, so the configuration history names them.
    return pghistory.context(user=operator.pk, username=operator.get_username(), url=url)


def stop_automation(*, operator: User, queue: Queue | None = None, url: str = "") -> datetime:
    """Press the stop switch of one queue (None: of all queues); return when it was pressed.

    The time is the database's clock. Pressing a stopped switch keeps the first press's time.
    The UPDATE waits for automatic decisions being written under the switch (they read it FOR
    SHARE); once it commits, none is taken.
    """
    _require_stop_permission(operator)
    with transaction.atomic(), _history(operator, url):
        if queue is None:
            # The migration made the row; a test database's flush may not have kept it.
            AutomationSwitch.objects.get_or_create(pk=1)
            AutomationSwitch.objects.filter(pk=1, stopped_at__isnull=True).update(stopped_at=Now())
            stopped = AutomationSwitch.objects.values_list("stopped_at", flat=True).get(pk=1)
        else:
            Queue.objects.filter(pk=queue.pk, automation_stopped_at__isnull=True).update(
                automation_stopped_at=Now()
            )
            stopped = Queue.objects.values_list("automation_stopped_at", flat=True).get(pk=queue.pk)
    logger.warning(
        "automatic decisions stopped",
        extra=log_extra(queue=queue.slug if queue else "*", operator=operator.pk),
    )
    assert stopped is not None  # set above, or by an earlier press
    return stopped


def restart_automation(*, operator: User, queue: Queue | None = None, url: str = "") -> bool:
    """Release the stop switch of one queue (None: of all queues); False if it was not pressed."""
    _require_stop_permission(operator)
    with transaction.atomic(), _history(operator, url):
        if queue is None:
            changed = AutomationSwitch.objects.filter(pk=1, stopped_at__isnull=False).update(
                stopped_at=None
            )
        else:
            changed = Queue.objects.filter(pk=queue.pk, automation_stopped_at__isnull=False).update(
                automation_stopped_at=None
            )
    if changed:
        logger.warning(
            "automatic decisions restarted",
            extra=log_extra(queue=queue.slug if queue else "*", operator=operator.pk),
        )
    return bool(changed)
