"""The item timeline's second-person lines: every check, return, QA review and adjudication.

One query: the item's lane tasks with their outcomes (and the QA reason) joined. Each task
gives a line when it was opened and one when it was finished, with who, when and what.
"""

from __future__ import annotations

from queue_app.admin.timeline_entry import Entry
from queue_app.models import ItemEventKind, LaneKind, LaneResult, LaneTask, ReviewItem

# Item events the lane lines below replace (the outcome row says more).
LANE_EVENT_KINDS = {
    ItemEventKind.CHECK_CONFIRMED,
    ItemEventKind.CHECK_RETURNED,
    ItemEventKind.QA_REVIEWED,
    ItemEventKind.ADJUDICATED,
    ItemEventKind.APPEAL_DECIDED,
}

_OPENED: dict[str, str] = {
    LaneKind.CHECK: "Decision #{d} waiting for a checker (no effect until confirmed)",
    LaneKind.QA: "Decision #{d} drawn for a blind QA review",
    LaneKind.ADJUDICATION: "QA disagreed with decision #{d}: waiting for adjudication",
    LaneKind.APPEAL: "Decision #{d} appealed by the affected person: waiting for a decision",
}


def lane_entries(item: ReviewItem) -> list[Entry]:
    """The item's lane tasks and outcomes as timeline entries."""
    tasks = (
        LaneTask.objects.filter(item=item)
        .select_related("outcome__reason_code", "outcome__actor", "maker")
        .order_by("id")
    )
    entries = []
    for task in tasks:
        entries.append(
            Entry(
                at=task.created_at,
                kind="pending" if task.kind == LaneKind.CHECK else "event",
                title=_OPENED[task.kind].format(d=task.decision_id),
                who=f"maker {task.maker.username}" if task.kind == LaneKind.CHECK else "",
            )
        )
        outcome = getattr(task, "outcome", None)
        if outcome is None:
            continue
        details = []
        if outcome.result == LaneResult.REVIEWED:
            details.append(
                f"QA verdict: {outcome.verdict} ({outcome.reason_code.label}); "
                f"{'agrees' if outcome.agrees_verdict else 'DISAGREES'} with the verdict, "
                f"{'same' if outcome.agrees_reason else 'different'} reason"
            )
        if outcome.overturn_id:
            details.append(f"Overturn decision #{outcome.overturn_id}")
        if outcome.note:
            details.append(f"Note: {outcome.note}")
        entries.append(
            Entry(
                at=outcome.created_at,
                kind={
                    LaneResult.CONFIRMED: "applied",
                    LaneResult.RETURNED: "dead",
                    LaneResult.OVERTURNED: "overturn",
                }.get(outcome.result, "decision"),
                title=f"{task.get_kind_display()} of decision #{task.decision_id}: "
                f"{outcome.get_result_display().lower()}",
                who=f"{outcome.actor_username}, user #{outcome.actor_id}",
                details=details,
            )
        )
    return entries
