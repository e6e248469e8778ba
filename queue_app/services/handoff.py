"""Escalation as a hand-off: where an item came from, where it went, and who may not take it.

An escalated item is a hand-off to a second person. It says who sent it on, when, why (their
reason and note) and from which item and decision; the original says where it went. Nobody who
decided earlier in the chain, and nobody who abandoned the item before it was moved, may lease
or decide it: the claim passes it over for them (leases_sql._CLAIM) and the database refuses it
(the reviewitem_handoff_guard and decision_handoff triggers). The functions here read what
the console, the admin and the API show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model

from queue_app.models import Decision, ItemEvent, ItemEventKind, ItemState, Queue, ReviewItem
from queue_app.services._common import User

HANDOFF_REFUSAL = (
    "Escalation is a hand-off: you took part earlier in this item's chain (you decided or held "
    "the item it escalates), so someone else must decide it."
)


@dataclass(frozen=True)
class ArrivedBy:
    """How an item reached its queue: an escalate verdict on another item, or abandonment."""

    kind: str  # "decision" (an escalate verdict) or "abandoned" (moved after too many leases)
    at: datetime
    from_item_id: int
    from_queue: Queue | None
    by: list[str]  # the escalating reviewer, or the reviewers who held and left the item
    decision: Decision | None = None  # the escalate verdict, for kind "decision"
    lease_count: int | None = None  # leases without a decision, for kind "abandoned"

    @property
    def reason_label(self) -> str:
        return self.decision.reason_code.label if self.decision else ""

    @property
    def note(self) -> str:
        return self.decision.note if self.decision else ""


@dataclass(frozen=True)
class HandOff:
    """Everything the pages and the API show about an item's escalations, both ways."""

    arrived: list[ArrivedBy] = field(default_factory=list)  # oldest first
    escalations: list[ReviewItem] = field(default_factory=list)  # items opened from this one
    excluded: list[str] = field(default_factory=list)  # who may not take it, by username

    @property
    def empty(self) -> bool:
        return not (self.arrived or self.escalations)


def _usernames(ids: list[int]) -> dict[int, str]:
    users = get_user_model().objects.filter(pk__in=ids).only("username")
    return {u.pk: u.get_username() for u in users}


def item_handoff(*, item: ReviewItem) -> HandOff:
    """Return how the item was escalated here, where it was escalated to, and who is barred."""
    arrived: list[ArrivedBy] = []
    if item.escalated_by_decision_id is not None:
        decision = Decision.objects.select_related("reason_code", "reviewer", "queue").get(
            pk=item.escalated_by_decision_id
        )
        arrived.append(
            ArrivedBy(
                kind="decision",
                at=decision.created_at,
                from_item_id=decision.item_id,
                from_queue=decision.queue,
                by=[decision.reviewer_name],
                decision=decision,
            )
        )
    # Only a moved item has left its intake queue (intake_queue never changes), and only a
    # decided item can have been escalated: an item on a reviewer's screen costs no query here.
    moved = item.intake_queue_id is not None and item.intake_queue_id != item.queue_id
    moves = (
        list(ItemEvent.objects.filter(item_id=item.pk, kind=ItemEventKind.AUTO_ESCALATED))
        if moved
        else []
    )
    user_ids = set(item.excluded_reviewer_ids)
    for move in moves:
        user_ids.update(move.detail.get("abandoned_by") or [])
    names = _usernames(sorted(user_ids)) if user_ids else {}
    queues = Queue.objects.in_bulk([m.detail.get("from_queue_id") for m in moves]) if moves else {}
    for move in moves:
        arrived.append(
            ArrivedBy(
                kind="abandoned",
                at=move.at,
                from_item_id=item.pk,
                from_queue=queues.get(move.detail.get("from_queue_id")),
                by=[names.get(u, f"user #{u}") for u in move.detail.get("abandoned_by") or []],
                lease_count=move.detail.get("lease_count"),
            )
        )
    arrived.sort(key=lambda a: a.at)
    escalations = (
        list(
            ReviewItem.objects.filter(escalated_from_id=item.pk)
            .select_related("queue", "escalated_by_decision")
            .order_by("id")
        )
        if item.state == ItemState.DECIDED
        else []
    )
    excluded = [names.get(u, f"user #{u}") for u in item.excluded_reviewer_ids]
    return HandOff(arrived=arrived, escalations=escalations, excluded=excluded)


def handoff_refusal(*, item: ReviewItem, user: User) -> str | None:
    """Return why the hand-off bars this user from taking or deciding the item, or None."""
    if user.pk in item.excluded_reviewer_ids:
        return HANDOFF_REFUSAL
    return None


def is_handoff_violation(exc: BaseException) -> bool:
    """Whether a database error is the hand-off triggers' refusal of an excluded reviewer."""
    return "hand-off:" in str(exc)
