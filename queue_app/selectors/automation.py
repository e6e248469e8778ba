"""What the stop switches of automatic decisions show: the global switch and each queue's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Q

from queue_app.models import AutomationSwitch, Queue


@dataclass(frozen=True)
class QueueAutomation:
    """One queue's automatic decisions: its threshold, QA rate and stop switch."""

    id: int
    slug: str
    name: str
    threshold: Decimal | None
    qa_rate: Decimal
    user: str
    stopped_at: datetime | None


@dataclass(frozen=True)
class AutomationState:
    stopped_at: datetime | None  # the switch for all queues
    queues: list[QueueAutomation]


def read_automation() -> AutomationState:
    """The global switch and every queue that decides automatically or has its switch pressed."""
    stopped_at = AutomationSwitch.objects.values_list("stopped_at", flat=True).filter(pk=1).first()
    queues = (
        Queue.objects.filter(
            Q(auto_decide_above__isnull=False) | Q(automation_stopped_at__isnull=False)
        )
        .select_related("auto_decide_user")
        .order_by("slug")
    )
    return AutomationState(
        stopped_at=stopped_at,
        queues=[
            QueueAutomation(
                id=q.pk,
                slug=q.slug,
                name=q.name,
                threshold=q.auto_decide_above,
                qa_rate=q.auto_decide_qa_rate,
                user=q.auto_decide_user.get_username() if q.auto_decide_user else "",
                stopped_at=q.automation_stopped_at,
            )
            for q in queues
        ],
    )
