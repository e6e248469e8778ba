"""Blind QA: who may see a decision while a QA review of it is in their hands. One rule.

A person who holds the lease of an open QA task re-decides the item without knowing what was
decided: while they hold it, no surface shows them any decision of that item (its verdict,
reason, note or reviewer), the lane's own page, the item's page, the "Same subject" list of
every other item and every other lane page of that item alike. Once their review is recorded
the task is done and the rule no longer applies.

Surfaces that show decisions ask blinded_item_ids (or is_blind_to) and drop what it names:
console/views.py (the item page), services/subjects.py (the subject list), console/lane_views.py
(lane pages), admin/blindness.py (the admin's item, decision and lane pages). The API, My
work and the exports need nothing: an API client's service user never holds a lane task
(lanes_sql._MAY_WORK_LANE), My work shows a reviewer only their own decisions, which the
lane triggers never let them QA, and the exports are files an operator writes from a shell.
"""

from __future__ import annotations

from collections.abc import Iterable

from queue_app.models import LaneKind, LaneState, LaneTask
from queue_app.services._common import User

BLIND_NOTE = "Hidden while you hold this item's blind QA review."


def _held_qa_tasks(user: User) -> Iterable[int]:
    # A lease that ran out is still the holder's until someone else claims the task (a renew
    # takes it back), so the expiry does not lift the rule; lanetask_open_owner serves this.
    # Always the primary, even inside replica_reads(): a lease taken a moment ago blinds at once.
    return (
        LaneTask.objects.using("default")
        .filter(kind=LaneKind.QA, state=LaneState.OPEN, lease_owner_id=user.pk)
        .values_list("item_id", flat=True)
    )


def blinded_item_ids(*, user: User) -> frozenset[int]:
    """Return the items whose decisions this user may not see now: their QA reviews in hand."""
    if not user.is_authenticated:
        return frozenset()
    return frozenset(_held_qa_tasks(user))


def is_blind_to(*, user: User, item_id: int) -> bool:
    """Return whether this user may not see the decisions of this item now."""
    return item_id in blinded_item_ids(user=user)
