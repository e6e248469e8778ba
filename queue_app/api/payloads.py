"""What the API says about items, leases and decisions (plain dicts the schemas validate)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from queue_app import services
from queue_app.evidence import attachments_of, item_evidence_hash
from queue_app.models import ApiClient, Decision, DecisionStatus, ItemState, ReviewItem
from queue_app.models.story import fresh_status


def _applied(decision: Decision) -> tuple[str, Any]:
    """Return (status, applied_at) of the decision's effect; relations must be preloaded."""
    # A decision its check holds back has no effect to report; the story says which.
    status = decision.story.status
    if status in (DecisionStatus.AWAITING_CHECK, DecisionStatus.RETURNED):
        return status, None
    if hasattr(decision, "applied"):
        return "applied", decision.applied.applied_at
    job = getattr(decision, "effect_job", None)
    return ("dead" if job is not None and job.dead else "pending"), None


def decision_out(
    decision: Decision, *, fresh_from: tuple[str, AbstractBaseUser] | None = None
) -> dict[str, Any]:
    """Render a decision; fresh_from=(reason code, reviewer) for one just inserted."""
    if fresh_from is not None:
        # Just inserted in this request: its reason and author are the ones sent, and its
        # effect cannot have been applied yet; no need to read any of it back.
        (reason_code, reviewer) = fresh_from
        # A decision in a checked queue waits for a human checker before any effect; nothing
        # else can have happened to a row this request inserted, so its story is not read back.
        held = getattr(decision, "awaiting_check", False)
        applied, applied_at = ("awaiting_check" if held else "pending"), None
        status: str = fresh_status(verdict=decision.verdict, awaiting_check=held)
    else:
        reason_code, reviewer = decision.reason_code.code, decision.reviewer
        applied, applied_at = _applied(decision)
        status = decision.story.status
    return {
        "id": decision.pk,
        "item_id": decision.item_id,
        "verdict": decision.verdict,
        "reason_code": reason_code,
        "evidence_hash": decision.evidence_hash,
        "note": decision.note,
        # As recorded with the decision (a later rename does not change it); today's name for
        # decisions recorded before names were.
        "reviewer": decision.reviewer_username or reviewer.get_username(),
        "lease_token": decision.lease_token,
        "supersedes": decision.supersedes_id,
        "corrected_verdict": decision.corrected_verdict,
        "created_at": decision.created_at,
        "suggestion_view": decision.suggestion_view,
        "suggestion_shown_at": decision.suggestion_shown_at,
        "suggestion_followed": decision.suggestion_followed,
        "applied": applied,
        "applied_at": applied_at,
        "status": status,
    }


def reload_decision(decision: Decision) -> Decision:
    """Return the decision with what decision_out reads (reason, author, effect) preloaded."""
    return Decision.objects.select_related(
        "reason_code", "reviewer", "applied", "effect_job", "story"
    ).get(pk=decision.pk)


def item_out(item: ReviewItem, client: ApiClient) -> dict[str, Any]:
    """Render an item with its decisions in order and the outcome that stands."""
    decisions = services.item_decisions(item_id=item.pk)
    return {
        "id": item.pk,
        "queue": item.queue.slug,
        "state": item.state,
        "subject": item.subject,
        "priority": item.priority,
        "payload": item.payload,
        "evidence_hash": item_evidence_hash(item),
        "due_at": item.due_at,
        "breached": services.is_breached(
            due_at=item.due_at, now=timezone.now(), decided_at=item.decided_at, state=item.state
        ),
        "subject_key": item.subject_key,
        "hold_until": item.hold_until,
        "idempotency_key": item.idempotency_key,
        "source_hash": item.source_hash,
        "trace_id": item.trace_id,
        "created_at": item.created_at,
        "evidence_updated_at": item.evidence_updated_at,
        "decided_at": item.decided_at,
        "lease_count": item.lease_count,
        "lease_expires": item.lease_expires,
        "leased_to_you": item.state == ItemState.LEASED and item.lease_owner_id == client.user_id,
        "standing_outcome": services.standing_outcome(item=item),
        "decisions": [decision_out(d) for d in decisions],
        "attachments": attachments_out(item),
        "suggestion": item.suggestion,
        **handoff_out(item),
    }


def handoff_out(item: ReviewItem) -> dict[str, Any]:
    """Render the item's escalation hand-off: where it came from, where it went, who is barred."""
    handoff = services.item_handoff(item=item)
    return {
        "escalated_from": [
            {
                "kind": a.kind,
                "at": a.at,
                "from_item_id": a.from_item_id,
                "from_queue": a.from_queue.slug if a.from_queue else None,
                "decision_id": a.decision.pk if a.decision else None,
                "by": a.by,
                "reason_code": a.decision.reason_code.code if a.decision else None,
                "reason": a.reason_label or None,
                "note": a.note,
                "lease_count": a.lease_count,
            }
            for a in handoff.arrived
        ],
        "escalations": [
            {
                "item_id": e.pk,
                "queue": e.queue.slug,
                "state": e.state,
                "decision_id": e.escalated_by_decision_id,
            }
            for e in handoff.escalations
        ],
        "excluded_reviewers": handoff.excluded,
    }


def attachments_out(item: ReviewItem) -> list[dict[str, Any]]:
    """Render an item's attachment entries, by name."""
    return [
        {"name": name, **entry} for name, entry in sorted(attachments_of(item.attachments).items())
    ]


def leased_out(item: ReviewItem) -> dict[str, Any]:
    """Render a freshly leased item: what a worker needs to decide it, fenced."""
    return {
        "id": item.pk,
        "subject": item.subject,
        "priority": item.priority,
        "payload": item.payload,
        "evidence_hash": item_evidence_hash(item),
        "trace_id": item.trace_id,
        "lease_token": item.lease_token,
        "lease_expires": item.lease_expires,
        "lease_count": item.lease_count,
        "due_at": item.due_at,
        "suggestion": item.suggestion,
    }


def subject_item_out(row: dict[str, Any], now: Any) -> dict[str, Any]:
    """Render one row of services.subject_history for GET /items?subject_key=."""
    return {
        "id": row["id"],
        "queue": row["queue_slug"],
        "state": row["state"],
        "subject": row["subject"],
        "created_at": row["created_at"],
        "due_at": row["due_at"],
        "breached": services.is_breached(
            due_at=row["due_at"], now=now, decided_at=row["decided_at"], state=row["state"]
        ),
        "decided_at": row["decided_at"],
        "standing_outcome": row["verdict"],
        "reason_code": row["reason_code"],
        "reviewer": row["reviewer"],
    }
