"""An item's history for its admin page: events, decisions and effects in one timeline.

Four queries whatever the history's length: the item's events, its decisions (with reviewer,
reason, applied record, outbox job and status joined), the queue names the events mention, and
the decision that stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from queue_app.admin.lane_timeline import LANE_EVENT_KINDS, lane_entries
from queue_app.admin.timeline_entry import Entry
from queue_app.datetimes import local_text
from queue_app.jsonutil import exact_dumps
from queue_app.models import (
    AppliedDecision,
    AppliedStatus,
    Decision,
    EffectJob,
    ItemEvent,
    ItemEventKind,
    ItemStory,
    Queue,
    ReviewItem,
    Verdict,
)
from queue_app.suggestion_words import decision_seen_words


@dataclass
class Timeline:
    entries: list[Entry]
    standing: Decision | None

    @property
    def standing_verdict(self) -> str | None:
        return self.standing.standing_verdict if self.standing else None


def _name(user: Any) -> str:
    if user is None:
        return "the system"
    full = user.get_full_name()
    return f"{full} ({user.username})" if full else user.username


def _author(decision: Decision) -> str:
    """Who decided, as they were named then, with their id and today's name.

    Decisions from before names were recorded have none: today's is shown, and says so.
    """
    user = decision.reviewer
    current = user.get_username()
    recorded = decision.reviewer_username
    if recorded is None:
        return f"{_name(user)}, user #{user.pk} (name at the time not recorded)"
    full = user.get_full_name()
    shown = f"{full} ({recorded})" if full else recorded
    if recorded != current:
        return f"{shown}, user #{user.pk}, since renamed {current}"
    return f"{shown}, user #{user.pk}"


def _counted(n: Any, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _event_entry(event: ItemEvent, queues: Mapping[Any, str]) -> Entry:
    detail: dict[str, Any] = event.detail or {}
    label = ItemEventKind(event.kind).label if event.kind in ItemEventKind.values else event.kind
    details = []
    if event.kind == ItemEventKind.AUTO_ESCALATED:
        details.append(
            f"Moved from {queues.get(detail.get('from_queue_id'), '?')} to "
            f"{queues.get(detail.get('to_queue_id'), '?')} after "
            f"{_counted(detail.get('lease_count', '?'), 'lease')} without a decision."
        )
    elif event.kind == ItemEventKind.CREATED and "priority" in detail:
        details.append(f"Priority {detail['priority']}.")
        if detail.get("due_at"):
            details.append(f"Due {_moment(detail['due_at'])}.")
    elif event.kind in (ItemEventKind.HELD, ItemEventKind.RESUMED):
        details += _hold_details(event.kind, detail)
    elif event.kind == ItemEventKind.ATTACHMENT_PUT:
        replaced = detail.get("previous_sha256")
        details.append(
            f"{detail.get('name', '?')}: {detail.get('content_type', '?')}, "
            f"sha256 {detail.get('sha256', '?')}"
            + (f" (replaced sha256 {replaced})" if replaced else "")
            + "."
        )
    elif event.kind == ItemEventKind.SUGGESTION_REVEALED:
        chosen = detail.get("chosen_verdict")
        details.append(f"After choosing {chosen}." if chosen else "Before choosing a verdict.")
    elif event.kind == ItemEventKind.ATTACHMENT_REVEALED:
        details.append(f"{detail.get('name', '?')} (sha256 {detail.get('sha256', '?')}).")
    return Entry(at=event.at, kind="event", title=label, who=_name(event.actor), details=details)


def _decision_entries(decision: Decision) -> list[Entry]:
    reason = f"{decision.reason_code.label} ({decision.reason_code.code})"
    if decision.verdict == Verdict.OVERTURN:
        title = (
            f"Overturn #{decision.pk} of decision #{decision.supersedes_id}: "
            f"now {decision.corrected_verdict}"
        )
        kind = "overturn"
    else:
        title = f"Decision #{decision.pk}: {decision.verdict}"
        kind = "decision"
    # The timeline's own lines say when an effect ran; the title says why a decision does not
    # stand, when it does not.
    if not decision.story.stands:
        title += f" ({decision.story.get_status_display()})"
    details = [f"Reason: {reason}", f"Evidence hash: {decision.evidence_hash[:16]}…"]
    if decision.note:
        details.append(f"Note: {decision.note}")
    seen = decision_seen_words(decision)
    if seen:
        details.append(f"Machine suggestion: {seen}.")
    entries = [
        Entry(
            at=decision.created_at,
            kind=kind,
            title=title,
            who=_author(decision),
            details=details,
            decision=decision,
        )
    ]
    try:
        applied = decision.applied
    except AppliedDecision.DoesNotExist:
        applied = None
    if applied is not None:
        entries.append(
            Entry(
                at=applied.applied_at,
                kind="applied",
                title=(
                    f"Decision #{decision.pk} superseded before its turn: effect not run"
                    if applied.status == AppliedStatus.SUPERSEDED
                    else f"Decision #{decision.pk} applied"
                ),
                who="apply worker",
                details=[f"Outcome: {exact_dumps(applied.outcome)}"] if applied.outcome else [],
            )
        )
        return entries
    try:
        job = decision.effect_job
    except EffectJob.DoesNotExist:
        return entries
    if job.dead:
        entries.append(
            Entry(
                at=job.next_attempt_at,
                kind="dead",
                title=f"Decision #{decision.pk} NOT applied: effect job dead",
                details=[
                    f"{_counted(job.attempts, 'attempt')}; last error: {job.last_error or '—'}"
                ],
            )
        )
    else:
        extra = f" (attempt {job.attempts}; last error: {job.last_error})" if job.attempts else ""
        entries.append(
            Entry(
                at=job.created_at,
                kind="pending",
                title=f"Decision #{decision.pk} waiting for the apply worker{extra}",
            )
        )
    return entries


def item_timeline(item: ReviewItem) -> Timeline:
    """Return the item's history, oldest first, and the decision that stands now."""
    events = list(ItemEvent.objects.filter(item=item).select_related("actor").order_by("at", "id"))
    decisions = list(
        Decision.objects.filter(item=item)
        .select_related("reviewer", "reason_code", "applied", "effect_job", "story")
        .order_by("id")
    )
    queue_ids = {
        event.detail.get(key)
        for event in events
        if event.kind == ItemEventKind.AUTO_ESCALATED and isinstance(event.detail, dict)
        for key in ("from_queue_id", "to_queue_id")
    }
    queues = dict(Queue.objects.filter(pk__in=queue_ids).values_list("pk", "name"))

    entries: list[Entry] = []
    if not any(event.kind == ItemEventKind.CREATED for event in events):
        # Items written without the intake service have no created event; the row still knows.
        entries.append(Entry(at=item.created_at, kind="event", title="Created"))
    # A decided event and its decision row are one fact; the decision line says more. So are
    # a lane event and its task's lines (below).
    entries += [
        _event_entry(e, queues)
        for e in events
        if e.kind != ItemEventKind.DECIDED and e.kind not in LANE_EVENT_KINDS
    ]
    for decision in decisions:
        entries += _decision_entries(decision)
    entries += lane_entries(item)
    entries.sort(key=lambda entry: entry.at)

    # Which decision stands is the item's one story (queue_app/models/story.py), not worked out
    # here.
    standing_id = (
        ItemStory.objects.filter(item_id=item.pk)
        .values_list("standing_decision_id", flat=True)
        .first()
    )
    standing = next((d for d in decisions if d.pk == standing_id), None)
    return Timeline(entries=entries, standing=standing)


def pretty_json(value: Any, indent: int = 0) -> str:
    """Render JSON indented for reading, decimals digit for digit (json.dumps would float them)."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, dict) and value:
        body = ",\n".join(
            f"{inner}{exact_dumps(str(k))}: {pretty_json(v, indent + 1)}" for k, v in value.items()
        )
        return "{\n" + body + "\n" + pad + "}"
    if isinstance(value, (list, tuple)) and value:
        body = ",\n".join(f"{inner}{pretty_json(v, indent + 1)}" for v in value)
        return "[\n" + body + "\n" + pad + "]"
    return exact_dumps(value)


# -- holds and deadlines --------------------------------------------------------------------------


def _moment(text: Any) -> str:
    """An ISO timestamp from an event's detail, shown as every page shows a moment."""
    try:
        return local_text(datetime.fromisoformat(str(text)))
    except ValueError:
        return str(text)


def _hold_details(kind: str, detail: dict[str, Any]) -> list[str]:
    """Say what a hold or resume did, and how the deadline moved (the clock pauses on hold)."""
    lines = []
    if kind == ItemEventKind.HELD:
        reason, until = detail.get("reason_code", "?"), _moment(detail.get("hold_until"))
        lines.append(f"Waiting for: {reason}; back by {until}.")
    else:
        cause = {
            "hold_ended": "its hold time came",
            "evidence_replaced": "its evidence was replaced",
            "attachment_put": "a file was attached",
        }.get(detail.get("cause", ""), detail.get("cause", "?"))
        lines.append(f"Back in the queue: {cause}.")
    before, after = detail.get("due_at_before"), detail.get("due_at")
    if before and after and before != after:
        lines.append(
            f"Deadline moved from {_moment(before)} to {_moment(after)} (paused while held)."
        )
    elif after:
        lines.append(f"Deadline {_moment(after)}.")
    return lines
