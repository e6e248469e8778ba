"""Decisions: append-only; the only write is an overturn, through its own form and the service."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from queue_app import services
from queue_app.admin.base import ReadOnlyAdmin
from queue_app.admin.blindness import BlindQAAdmin
from queue_app.admin.filters import (
    AppliedFilter,
)
from queue_app.admin.forms import OverturnForm
from queue_app.admin.pagination import CappedCountAdmin
from queue_app.datetimes import local_text
from queue_app.errors import AlreadySuperseded, ReviewError
from queue_app.exports import export_lines
from queue_app.models import (
    AppliedDecision,
    ChainVerification,
    Decision,
    DecisionStatus,
    Verdict,
)
from queue_app.suggestion_words import decision_seen_words
from reviewconsole.routers import replica_alias


def _export_response(queryset: QuerySet[Decision], fmt: str) -> StreamingHttpResponse:
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    # The rows stream after the view returns; an export tolerates replication lag, so it reads
    # from the replica if there is one.
    response = StreamingHttpResponse(
        export_lines(queryset.using(replica_alias()), fmt=fmt),
        content_type=f"{content_type}; charset=utf-8",
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="decisions-{stamp}.{fmt}"'
    return response


def reviewer_as_decided(decision: Decision) -> str:
    """The reviewer's username when they decided and their user id; today's name if renamed."""
    current = decision.reviewer.get_username()
    recorded = decision.reviewer_username
    if recorded is None:
        # Decided before the username was recorded with decisions.
        return f"{current} (user #{decision.reviewer_id}; name not recorded, today's shown)"
    if recorded != current:
        return f"{recorded} (user #{decision.reviewer_id}, now {current})"
    return f"{recorded} (user #{decision.reviewer_id})"


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
        ("Decided by", reviewer_as_decided(decision)),
        ("Decided at", local_text(decision.created_at)),
    ]
    if decision.note:
        rows.append(("Note", decision.note))
    return rows


@admin.register(Decision)
class DecisionAdmin(CappedCountAdmin, BlindQAAdmin, ReadOnlyAdmin):
    """Append-only: the only write is an overturn, through its own form and the service."""

    list_display = (
        "id",
        "created_at",
        "item_link",
        "queue",
        "reviewer_as_decided",
        "verdict",
        "reason_code",
        "corrected_verdict",
        "supersedes_id",
        "applied_at",
        "suggestion_seen",
    )
    list_select_related = ("item", "queue", "reviewer", "reason_code", "applied")
    list_filter = ("verdict", "queue", AppliedFilter, "created_at")
    # Searched by get_search_results below: listed here so the admin shows the search box.
    search_fields = ("reviewer_username",)
    search_help_text = (
        "A decision or item number, or a reviewer: part of today's username, "
        "or the whole username as decided (any case)."
    )
    ordering = ("-id",)
    show_full_result_count = False
    list_per_page = 50
    actions = ("export_jsonl", "export_csv")
    fields = (
        "item",
        "queue",
        "reviewer",
        "reviewer_username",
        "verdict",
        "reason_code",
        "note",
        "supersedes",
        "corrected_verdict",
        "superseded_by_link",
        "suggestion_seen",
        "suggestion_view",
        "suggestion_shown_at",
        "suggestion_followed",
        "evidence_hash",
        "lease_token",
        "created_at",
        "applied_at",
        "chain_seq",
        "chain_hash",
    )
    readonly_fields = (
        "superseded_by_link",
        "applied_at",
        "reviewer_username",
        "suggestion_seen",
        "suggestion_view",
        "suggestion_shown_at",
        "suggestion_followed",
    )

    @admin.display(description="reviewer", ordering="reviewer_username")
    def reviewer_as_decided(self, decision: Decision) -> str:
        return reviewer_as_decided(decision)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if term.lstrip("#").isdigit():
            number = int(term.lstrip("#"))
            return queryset.filter(pk=number) | queryset.filter(item_id=number), False
        # A substring of the name as decided would read every decision. Today's names are a
        # few hundred users, read whole; the name as decided is matched whole, from its index
        # (decision_reviewer_name): a renamed reviewer's decisions are found by the old name.
        reviewers = list(
            get_user_model().objects.filter(username__icontains=term).values_list("pk", flat=True)
        )
        return (
            queryset.filter(Q(reviewer_id__in=reviewers) | Q(reviewer_username__iexact=term)),
            False,
        )

    @admin.display(description="machine suggestion")
    def suggestion_seen(self, decision: Decision) -> str:
        """What the maker saw of the suggestion and whether they followed it ("—": none)."""
        return decision_seen_words(decision) or "—"

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
        later = services.overturn_of(decision_id=decision.pk)
        if later is None:
            return "— (this decision stands)" if decision.story.stands else "—"
        url = reverse("admin:queue_app_decision_change", args=[later.pk])
        said = " (awaiting its check)" if not later.story.stands else ""
        return format_html('<a href="{}">{}</a>{}', url, later, said)

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
        if decision.verdict == Verdict.ESCALATE or not decision.story.stands:
            return None
        if services.overturn_of(decision_id=decision.pk) is not None:
            return None
        if services.four_eyes_refusal(decision=decision, user=request.user) is not None:
            return None
        return reverse("admin:queue_app_decision_overturn", args=[decision.pk])

    def overturn_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Show and handle the overturn form; service refusals come back as form errors."""
        decision = get_object_or_404(
            self.get_queryset(request).select_related("item", "queue", "reviewer", "reason_code"),
            pk=object_id,
        )
        if not self.has_view_permission(request, decision) or not request.user.has_perm(
            "queue_app.can_overturn"
        ):
            raise PermissionDenied
        superseded_by = services.overturn_of(decision_id=decision.pk)
        if superseded_by is not None:
            # Already overturned: no form (the service would refuse it); point at what stands.
            return self._already_overturned(request, decision, superseded_by)
        form = OverturnForm(request.POST or None, decision=decision)
        # Four eyes: someone who may not overturn in this chain is told why, and offered no
        # form (a forced POST is refused the same way; the service and the database would too).
        refusal = services.four_eyes_refusal(decision=decision, user=request.user)
        if request.method == "POST" and refusal is None and form.is_valid():
            try:
                overturn = services.overturn_decision(
                    decision_id=decision.pk,
                    admin=request.user,
                    corrected_verdict=form.cleaned_data["corrected_verdict"],
                    reason_code=form.cleaned_data["reason_code"],
                    note=form.cleaned_data["note"],
                )
            except AlreadySuperseded:
                # Another admin's overturn committed between the check above and this one's
                # lock: answer as if this POST had come after it (the same page, the same 409).
                superseded_by = services.overturn_of(decision_id=decision.pk)
                if superseded_by is not None:
                    return self._already_overturned(request, decision, superseded_by)
                form.add_error(None, AlreadySuperseded.message)
            except ReviewError as exc:
                form.add_error(None, exc.message)
            else:
                self.log_addition(request, overturn, [{"added": {}}])
                if getattr(overturn, "awaiting_check", False):
                    # The queue's check policy covers the corrected verdict: a second person
                    # confirms it in the check lane before it takes effect.
                    said = (
                        f"Overturn #{overturn.pk} recorded: it waits for a second person's "
                        f"check before {overturn.corrected_verdict} takes effect."
                    )
                else:
                    said = (
                        f"Overturn #{overturn.pk} recorded: decision #{decision.pk} is "
                        f"superseded and {overturn.corrected_verdict} now stands. The apply "
                        "worker carries it out."
                    )
                self.message_user(request, said, messages.SUCCESS)
                return redirect("admin:queue_app_reviewitem_change", decision.item_id)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Overturn decision #{decision.pk}",
            "decision": decision,
            "summary": _decision_summary(decision),
            "form": form,
            "standing": services.standing_decision(item=decision.item_id),
            # Returned overturns stay in the log; the next correction is written beside them.
            "returned": services.overturns_returned(decision_id=decision.pk),
            "refusal": refusal,
            "media": self.media + form.media,
        }
        return TemplateResponse(request, "admin/queue_app/decision/overturn.html", context)

    def _already_overturned(
        self, request: HttpRequest, decision: Decision, superseded_by: Decision
    ) -> HttpResponse:
        standing = services.standing_decision(item=decision.item_id)
        waiting = superseded_by.story.status == DecisionStatus.AWAITING_CHECK
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": (
                f"Decision #{decision.pk} has an overturn awaiting its check"
                if waiting
                else f"Decision #{decision.pk} was already overturned"
            ),
            "waiting": waiting,
            "returned": services.overturns_returned(decision_id=decision.pk),
            "decision": decision,
            "summary": _decision_summary(decision),
            "superseded_by": superseded_by,
            "standing": standing,
            "standing_overturn_url": (
                self._overturn_url_for(request, standing) if standing is not None else None
            ),
        }
        status = 409 if request.method == "POST" else 200
        return TemplateResponse(
            request, "admin/queue_app/decision/overturn.html", context, status=status
        )
