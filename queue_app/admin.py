"""Django admin: configuration, read-only audit, and overturns as the only correction."""

from queue_app.api import admin as api_admin  # noqa: F401, I001  (registers ApiClient)

# No `from __future__ import annotations` here: it would have to precede the import above, which
# stays first by agreement. Every annotation below is valid at runtime on Python 3.11.
import uuid
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from queue_app import services
from queue_app.admin_filters import (
    AgeFilter,
    AppliedFilter,
    JobStatusFilter,
    LeaseCountFilter,
    RetiredFilter,
)
from queue_app.admin_forms import OverturnForm, QueueForm
from queue_app.admin_timeline import item_timeline, pretty_json
from queue_app.errors import ReviewError
from queue_app.exports import export_lines
from queue_app.models import (
    AppliedDecision,
    ChainVerification,
    Decision,
    EffectJob,
    Queue,
    ReasonCode,
    ReviewItem,
    Verdict,
)


# Admins and operators (/ops/ shares this frame) should see the product's name, not Django's.
admin.site.site_header = "Review Console administration"
admin.site.site_title = "Review Console admin"
admin.site.index_title = "Configuration and audit"


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable by anyone with the view permission; nobody adds, changes or deletes here."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# -- configuration -------------------------------------------------------------------------------


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
    form = QueueForm
    list_display = (
        "slug",
        "name",
        "lease_ttl",
        "escalation_threshold",
        "escalation_queue",
        "effect",
        "max_in_flight",
    )
    list_select_related = ("escalation_queue",)
    search_fields = ("slug", "name")
    filter_horizontal = ("reviewer_groups",)
    fieldsets = (
        (None, {"fields": ("slug", "name", "description")}),
        ("Leases", {"fields": ("lease_ttl", "max_in_flight")}),
        ("Escalation", {"fields": ("escalation_threshold", "escalation_queue")}),
        ("Effect", {"fields": ("effect", "webhook_url", "webhook_secret_env")}),
        ("Access", {"fields": ("reviewer_groups",)}),
    )


@admin.register(ReasonCode)
class ReasonCodeAdmin(admin.ModelAdmin):
    list_display = ("code", "label", "verdict", "queue", "is_active", "retired_at")
    list_select_related = ("queue",)
    list_filter = ("queue", "verdict", RetiredFilter)
    search_fields = ("code", "label")
    actions = ("retire", "unretire")
    readonly_fields = ("retired_at",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Decisions point at a code by id: renaming what it means would rewrite their history.
        if obj is not None:
            return ("queue", "verdict", "code", "retired_at")
        return self.readonly_fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # retire instead: past decisions keep their reason

    @admin.display(boolean=True, description="active")
    def is_active(self, reason: ReasonCode) -> bool:
        return reason.retired_at is None

    @admin.action(
        description="Retire selected codes (hide from new decisions)", permissions=["change"]
    )
    def retire(self, request: HttpRequest, queryset: QuerySet[ReasonCode]) -> None:
        count = queryset.filter(retired_at__isnull=True).update(retired_at=timezone.now())
        self.message_user(request, f"Retired {count} reason code(s).", messages.SUCCESS)

    @admin.action(description="Bring selected codes back into use", permissions=["change"])
    def unretire(self, request: HttpRequest, queryset: QuerySet[ReasonCode]) -> None:
        count = queryset.filter(retired_at__isnull=False).update(retired_at=None)
        self.message_user(request, f"Restored {count} reason code(s).", messages.SUCCESS)


# -- items ---------------------------------------------------------------------------------------


@admin.register(ReviewItem)
class ReviewItemAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "subject",
        "queue",
        "state",
        "priority",
        "lease_count",
        "created_at",
        "decided_at",
    )
    list_display_links = ("id", "subject")
    list_select_related = ("queue",)
    list_filter = ("queue", "state", LeaseCountFilter, AgeFilter)
    # Searched by get_search_results below: listed here so the admin shows the search box.
    search_fields = ("subject",)
    search_help_text = "Subject (contains), idempotency key (exact) or trace id."
    ordering = ("-id",)
    # Filtered pages skip a second count(*) over the whole 100k+ table ("of N total").
    show_full_result_count = False
    list_per_page = 50
    fieldsets = (
        (None, {"fields": ("subject", "queue", "state", "priority", "created_at")}),
        ("Evidence", {"fields": ("evidence", "evidence_updated_at", "source_hash")}),
        (
            "Tracing",
            {"fields": ("idempotency_key", "trace_id", "escalated_from")},
        ),
        (
            "Lease",
            {"fields": ("lease_owner", "lease_expires", "lease_count", "decided_at")},
        ),
    )
    readonly_fields = ("evidence",)

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
        return queryset.filter(subject__icontains=term), False

    @admin.display(description="Evidence (as the reviewer saw it)")
    def evidence(self, item: ReviewItem) -> str:
        return format_html('<pre class="evidence">{}</pre>', pretty_json(item.payload))

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


# -- decisions -----------------------------------------------------------------------------------


def _export_response(queryset: QuerySet[Decision], fmt: str) -> StreamingHttpResponse:
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(
        export_lines(queryset, fmt=fmt), content_type=f"{content_type}; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="decisions-{stamp}.{fmt}"'
    return response


def _decision_summary(decision: Decision) -> list[tuple[str, str]]:
    """Label/value rows describing a decision at the top of its overturn form."""
    item_url = reverse("admin:queue_app_reviewitem_change", args=[decision.item_id])
    rows = [
        ("Item", format_html('<a href="{}#history">{}</a>', item_url, decision.item)),
        ("Queue", str(decision.queue)),
        (
            "Verdict",
            format_html(
                "<strong>{}</strong> — {}", decision.standing_verdict, decision.reason_code.label
            ),
        ),
        ("Decided by", decision.reviewer.get_full_name() or decision.reviewer.username),
        ("Decided at", f"{decision.created_at:%Y-%m-%d %H:%M:%S} UTC"),
    ]
    if decision.note:
        rows.append(("Note", decision.note))
    return rows


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    """Append-only: the only write is an overturn, through its own form and the service."""

    list_display = (
        "id",
        "created_at",
        "item_link",
        "queue",
        "reviewer",
        "verdict",
        "reason_code",
        "corrected_verdict",
        "supersedes_id",
        "applied_at",
    )
    list_select_related = ("item", "queue", "reviewer", "reason_code", "applied")
    list_filter = ("verdict", "queue", AppliedFilter, "created_at")
    search_fields = ("reviewer__username",)
    search_help_text = "Reviewer username, or a decision or item number."
    ordering = ("-id",)
    show_full_result_count = False
    list_per_page = 50
    actions = ("export_jsonl", "export_csv")
    fields = (
        "item",
        "queue",
        "reviewer",
        "verdict",
        "reason_code",
        "note",
        "supersedes",
        "corrected_verdict",
        "superseded_by_link",
        "evidence_hash",
        "lease_token",
        "created_at",
        "applied_at",
        "chain_seq",
        "chain_hash",
    )
    readonly_fields = ("superseded_by_link", "applied_at")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if term.lstrip("#").isdigit():
            number = int(term.lstrip("#"))
            return queryset.filter(pk=number) | queryset.filter(item_id=number), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="item", ordering="item_id")
    def item_link(self, decision: Decision) -> str:
        url = reverse("admin:queue_app_reviewitem_change", args=[decision.item_id])
        return format_html('<a href="{}">{}</a>', url, decision.item)

    @admin.display(description="applied at")
    def applied_at(self, decision: Decision) -> Any:
        try:
            return decision.applied.applied_at
        except AppliedDecision.DoesNotExist:
            return None

    @admin.display(description="overturned by")
    def superseded_by_link(self, decision: Decision) -> str:
        try:
            later = decision.superseded_by
        except Decision.DoesNotExist:
            return "— (this decision stands)" if decision.verdict != Verdict.ESCALATE else "—"
        url = reverse("admin:queue_app_decision_change", args=[later.pk])
        return format_html('<a href="{}">{}</a>', url, later)

    @admin.action(description="Export selected decisions as JSON lines")
    def export_jsonl(self, request: HttpRequest, queryset: QuerySet) -> StreamingHttpResponse:
        return _export_response(queryset, "jsonl")

    @admin.action(description="Export selected decisions as CSV")
    def export_csv(self, request: HttpRequest, queryset: QuerySet) -> StreamingHttpResponse:
        return _export_response(queryset, "csv")

    def get_urls(self) -> list[URLPattern]:
        overturn = path(
            "<int:object_id>/overturn/",
            self.admin_site.admin_view(self.overturn_view),
            name="queue_app_decision_overturn",
        )
        return [overturn, *super().get_urls()]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {"chain": ChainVerification.objects.order_by("-ran_at").first()}
        return super().changelist_view(request, {**context, **(extra_context or {})})

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        decision = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if decision is not None:
            context["overturn_url"] = self._overturn_url_for(request, decision)
        return super().change_view(request, object_id, form_url, context)

    def _overturn_url_for(self, request: HttpRequest, decision: Decision) -> str | None:
        """Return the overturn form's URL if this user could overturn this decision now."""
        if not request.user.has_perm("queue_app.can_overturn"):
            return None
        if decision.verdict == Verdict.ESCALATE:
            return None
        if Decision.objects.filter(supersedes_id=decision.pk).exists():
            return None
        return reverse("admin:queue_app_decision_overturn", args=[decision.pk])

    def overturn_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Show and handle the overturn form; service refusals come back as form errors."""
        decision = get_object_or_404(
            Decision.objects.select_related("item", "queue", "reviewer", "reason_code"),
            pk=object_id,
        )
        if not self.has_view_permission(request, decision) or not request.user.has_perm(
            "queue_app.can_overturn"
        ):
            raise PermissionDenied
        form = OverturnForm(request.POST or None, decision=decision)
        if request.method == "POST" and form.is_valid():
            try:
                overturn = services.overturn_decision(
                    decision_id=decision.pk,
                    admin=request.user,
                    corrected_verdict=form.cleaned_data["corrected_verdict"],
                    reason_code=form.cleaned_data["reason_code"],
                    note=form.cleaned_data["note"],
                )
            except ReviewError as exc:
                form.add_error(None, exc.message)
            else:
                self.log_addition(request, overturn, [{"added": {}}])
                self.message_user(
                    request,
                    f"Overturn #{overturn.pk} recorded: decision #{decision.pk} is superseded and "
                    f"{overturn.corrected_verdict} now stands. The apply worker carries it out.",
                    messages.SUCCESS,
                )
                return redirect("admin:queue_app_reviewitem_change", decision.item_id)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Overturn decision #{decision.pk}",
            "decision": decision,
            "summary": _decision_summary(decision),
            "form": form,
            "standing": services.standing_decision(item=decision.item_id),
            "is_author": decision.reviewer_id == request.user.pk,
            "media": self.media + form.media,
        }
        return TemplateResponse(request, "admin/queue_app/decision/overturn.html", context)


@admin.register(AppliedDecision)
class AppliedDecisionAdmin(ReadOnlyAdmin):
    list_display = ("decision", "applied_at", "outcome")
    list_select_related = ("decision",)
    ordering = ("-applied_at",)
    show_full_result_count = False


@admin.register(EffectJob)
class EffectJobAdmin(ReadOnlyAdmin):
    list_display = (
        "decision",
        "queue",
        "status",
        "attempts",
        "next_attempt_at",
        "last_error",
        "done_at",
    )
    list_select_related = ("decision", "queue")
    list_filter = (JobStatusFilter, "queue")
    ordering = ("-created_at",)
    show_full_result_count = False
    actions = ("retry",)

    @admin.display(description="status")
    def status(self, job: EffectJob) -> str:
        if job.done_at:
            return "done"
        return "DEAD" if job.dead else "waiting"

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("queue_app.change_effectjob")

    @admin.action(description="Retry selected dead jobs", permissions=["retry"])
    def retry(self, request: HttpRequest, queryset: QuerySet[EffectJob]) -> None:
        revived = sum(
            services.retry_effect_job(decision_id=job_id, operator=request.user)
            for job_id in queryset.values_list("decision_id", flat=True)
        )
        skipped = queryset.count() - revived
        note = f" {skipped} were not dead and were left alone." if skipped else ""
        self.message_user(request, f"Put {revived} dead job(s) back in line.{note}")


@admin.register(ChainVerification)
class ChainVerificationAdmin(ReadOnlyAdmin):
    list_display = ("ran_at", "ok", "checked", "first_broken_id", "message")
    ordering = ("-ran_at",)
