"""Queue configuration and reason codes: the only models admins edit directly."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from queue_app.admin.base import HeldPermissionAdmin
from queue_app.admin.filters import (
    RetiredFilter,
)
from queue_app.admin.forms import QueueForm, ReasonCodeForm, reason_code_in_use
from queue_app.models import (
    CheckPolicy,
    EvidenceRule,
    HoldReason,
    Queue,
    ReasonCode,
)


class EvidenceRuleInline(admin.TabularInline):
    """The queue's warnings on payload fields; each rule is checked when saved (model clean)."""

    model = EvidenceRule
    extra = 0
    fields = ("path", "test", "value", "message")
    verbose_name = "evidence warning rule"


class HoldReasonInline(admin.TabularInline):
    """Why an item may wait: the closed set a reviewer picks from when holding."""

    model = HoldReason
    extra = 0
    fields = ("code", "label", "retired_at")
    verbose_name = "hold reason"


class CheckPolicyInline(admin.TabularInline):
    """Maker-checker: which verdicts need a second person's check before their effect runs.

    Empty path: always. A path and a threshold: when the payload's number there is at or
    above it (compared exactly; a missing or non-numeric value needs a check too).
    """

    model = CheckPolicy
    extra = 0
    fields = ("verdict", "path", "threshold")
    verbose_name = "maker-checker policy"
    verbose_name_plural = "maker-checker policies (decisions that need a checker)"


@admin.register(Queue)
class QueueAdmin(HeldPermissionAdmin):
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
    inlines = (EvidenceRuleInline, HoldReasonInline, CheckPolicyInline)
    fieldsets = (
        (None, {"fields": ("slug", "name", "description")}),
        ("Leases", {"fields": ("lease_ttl", "max_in_flight", "release_skip")}),
        ("Evidence", {"fields": ("sensitive",)}),
        ("Escalation", {"fields": ("escalation_threshold", "escalation_queue")}),
        ("Deadlines and holds", {"fields": ("default_sla", "sla_warning", "max_hold")}),
        ("Effect", {"fields": ("effect", "webhook_url", "webhook_secret_env")}),
        ("Access", {"fields": ("reviewer_groups",)}),
        # Second-person controls: maker-checker policies are the inline below.
        ("QA sampling", {"fields": ("qa_rate",)}),
    )


@admin.register(ReasonCode)
class ReasonCodeAdmin(HeldPermissionAdmin):
    form = ReasonCodeForm
    list_display = ("code", "label", "verdict", "queue", "is_default", "is_active", "retired_at")
    list_select_related = ("queue",)
    list_filter = ("queue", "verdict", RetiredFilter)
    search_fields = ("code", "label")
    actions = ("retire", "unretire")
    readonly_fields = ("retired_at",)

    form = ReasonCodeForm

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Decisions point at a code by id: renaming what it means would rewrite their history.
        # The label is the wording past decisions show, so it freezes at the first use (the
        # database refuses the change then too: reasoncode_frozen_once_used).
        if obj is not None and reason_code_in_use(obj):
            return ("queue", "verdict", "code", "label", "retired_at")
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
