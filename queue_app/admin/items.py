"""Review items: read-only, with the item's timeline of events and decisions."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from queue_app.admin.base import ReadOnlyAdmin
from queue_app.admin.blindness import BlindQAAdmin
from queue_app.admin.filters import (
    AgeFilter,
    LeaseCountFilter,
)
from queue_app.admin.handoff import render_handoff
from queue_app.admin.pagination import CappedCountAdmin
from queue_app.admin.timeline import item_timeline, pretty_json
from queue_app.models import (
    ReviewItem,
)
from queue_app.models.subject_search import SEARCH_HELP, subject_has_words


def _one_line(text: str) -> str:
    """Return text kept to one line by admin.css, whole in its title for hover."""
    return format_html('<span class="one-line" title="{}">{}</span>', text, text)


@admin.register(ReviewItem)
class ReviewItemAdmin(CappedCountAdmin, BlindQAAdmin, ReadOnlyAdmin):
    blind_item_path = "id"

    # Read at 1366 px, a common laptop width: subjects and queue names on one line, cut with an
    # ellipsis and whole on hover; dates never wrap (admin.css). The nav sidebar is left off this
    # one list so the dates fit beside the filters.
    list_display = (
        "id",
        "subject_line",
        "queue_name",
        "state",
        "priority",
        "leases",
        "created_at",
        "decided_at",
    )
    list_display_links = ("id", "subject_line")
    list_select_related = ("queue",)
    list_filter = ("queue", "state", LeaseCountFilter, AgeFilter)
    # Searched by get_search_results below: listed here so the admin shows the search box.
    search_fields = ("subject",)
    search_help_text = (
        "An idempotency key, subject key or trace id (exact), or else the subject's "
        + SEARCH_HELP
        + "."
    )
    ordering = ("-id",)
    # Filtered pages skip a second count(*) over the whole 100k+ table ("of N total").
    show_full_result_count = False
    list_per_page = 50
    fieldsets = (
        (None, {"fields": ("subject", "queue", "state", "priority", "created_at")}),
        ("Evidence", {"fields": ("evidence", "evidence_updated_at", "source_hash")}),
        (
            "Tracing",
            {
                "fields": (
                    "idempotency_key",
                    "created_by_client",
                    "intake_queue",
                    "trace_id",
                    "escalated_from",
                    "escalated_by_decision",
                )
            },
        ),
        (
            "Lease",
            {"fields": ("lease_owner", "lease_expires", "lease_count", "decided_at")},
        ),
        ("Escalation hand-off", {"fields": ("hand_off",)}),
        (
            "Deadline and hold",
            {"fields": ("subject_key", "due_at", "hold_until", "held_at", "hold_reason")},
        ),
    )
    readonly_fields = ("evidence", "hand_off")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            # A trace id is looked up exactly, not as a substring of every row's uuid text.
            return queryset.filter(trace_id=uuid.UUID(term)), False
        except ValueError:
            pass
        # An exact key is answered by its unique index; OR-ing it with the substring search
        # below would make every key lookup a full scan.
        by_key = queryset.filter(idempotency_key=term)
        if by_key.exists():
            return by_key, False
        # A subject key likewise, on item_subject_key: all of one customer's items.
        by_subject = queryset.filter(subject_key=term)
        if by_subject.exists():
            return by_subject, False
        # Else the subject's words, from the item_subject_words index: a substring search would
        # read every item.
        has_words = subject_has_words(term)
        if has_words is None:
            return queryset.none(), False
        return queryset.filter(has_words), False

    class Media:
        css = {"all": ("reviewadmin/admin.css",)}

    @admin.display(description="subject", ordering="subject")
    def subject_line(self, item: ReviewItem) -> str:
        return _one_line(item.subject)

    @admin.display(description="queue", ordering="queue__name")
    def queue_name(self, item: ReviewItem) -> str:
        return _one_line(item.queue.name)

    @admin.display(description="leases", ordering="lease_count")
    def leases(self, item: ReviewItem) -> int:
        return item.lease_count

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {"is_nav_sidebar_enabled": False, **(extra_context or {})}
        return super().changelist_view(request, context)

    @admin.display(description="Evidence (as the reviewer saw it)")
    def evidence(self, item: ReviewItem) -> str:
        return format_html('<pre class="evidence">{}</pre>', pretty_json(item.payload))

    @admin.display(description="Hand-off")
    def hand_off(self, item: ReviewItem) -> str:
        return render_handoff(item)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        item = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if item is not None and self.has_view_permission(request, item):
            context["timeline"] = item_timeline(item)
        return super().change_view(request, object_id, form_url, context)
