"""The outbox and the chain as operators audit them: applied rows, effect jobs, verifications."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from queue_app import services
from queue_app.admin.base import ReadOnlyAdmin
from queue_app.admin.blindness import BlindQAAdmin
from queue_app.admin.filters import (
    JobStatusFilter,
)
from queue_app.admin.pagination import CappedCountAdmin
from queue_app.models import (
    AppliedDecision,
    ChainVerification,
    EffectJob,
)


@admin.register(AppliedDecision)
class AppliedDecisionAdmin(CappedCountAdmin, BlindQAAdmin, ReadOnlyAdmin):
    blind_item_path = "decision__item_id"

    list_display = ("decision", "applied_at", "outcome")
    list_select_related = ("decision",)
    ordering = ("-applied_at",)
    show_full_result_count = False


@admin.register(EffectJob)
class EffectJobAdmin(CappedCountAdmin, BlindQAAdmin, ReadOnlyAdmin):
    blind_item_path = "decision__item_id"

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
        revived = services.retry_effect_jobs(
            decision_ids=queryset.values_list("decision_id", flat=True), operator=request.user
        )
        skipped = queryset.count() - revived
        note = f" {skipped} were not dead and were left alone." if skipped else ""
        self.message_user(request, f"Put {revived} dead job(s) back in line.{note}")


@admin.register(ChainVerification)
class ChainVerificationAdmin(CappedCountAdmin, ReadOnlyAdmin):
    list_display = ("ran_at", "ok", "checked", "first_broken_id", "message")
    ordering = ("-ran_at",)
