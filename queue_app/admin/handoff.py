"""An item's escalation hand-off on its admin page: its origin, its escalations, who is barred."""

from __future__ import annotations

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from queue_app.datetimes import local_text
from queue_app.models import ReviewItem
from queue_app.services import item_handoff


def _item_link(pk: int) -> SafeString:
    url = reverse("admin:queue_app_reviewitem_change", args=[pk])
    return format_html('<a href="{}">item #{}</a>', url, pk)


def _decision_link(pk: int) -> SafeString:
    url = reverse("admin:queue_app_decision_change", args=[pk])
    return format_html('<a href="{}">decision #{}</a>', url, pk)


def render_handoff(item: ReviewItem) -> SafeString:
    """Return the hand-off as HTML for a read-only admin field, or a dash when there is none."""
    handoff = item_handoff(item=item)
    if handoff.empty:
        return mark_safe('<span class="quiet">Not an escalation, and not escalated.</span>')
    lines: list[SafeString] = []
    for arrived in handoff.arrived:
        queue = arrived.from_queue.name if arrived.from_queue else "another queue"
        if arrived.kind == "decision" and arrived.decision is not None:
            lines.append(
                format_html(
                    "Escalated by <strong>{}</strong> on {} from {} in {} ({}). "
                    "Reason: {}. Note: {}",
                    arrived.by[0],
                    local_text(arrived.at),
                    _item_link(arrived.from_item_id),
                    queue,
                    _decision_link(arrived.decision.pk),
                    arrived.reason_label,
                    arrived.note or "none",
                )
            )
        else:
            lines.append(
                format_html(
                    "Moved here from {} on {} after {} leases without a decision; held by {}.",
                    queue,
                    local_text(arrived.at),
                    arrived.lease_count,
                    ", ".join(arrived.by) or "nobody recorded",
                )
            )
    for esc in handoff.escalations:
        lines.append(
            format_html(
                "Escalated to {} in {}{} ({}).",
                _item_link(esc.pk),
                esc.queue.name,
                format_html(" by {}", _decision_link(esc.escalated_by_decision_id))
                if esc.escalated_by_decision_id
                else "",
                esc.get_state_display().lower(),
            )
        )
    if handoff.excluded:
        lines.append(
            format_html(
                "Not to be leased or decided by: {} (they took part earlier in its chain).",
                ", ".join(handoff.excluded),
            )
        )
    return format_html(
        '<ul class="handoff">{}</ul>', format_html_join("", "<li>{}</li>", ((x,) for x in lines))
    )
