"""Queue configuration and reason codes: the only models admins edit directly."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import BaseForm
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.utils import timezone

from queue_app.admin.base import HeldPermissionAdmin
from queue_app.admin.filters import (
    RetiredFilter,
)
from queue_app.admin.forms import QueueForm, ReasonCodeForm, reason_code_in_use
from queue_app.models import (
    AutomationSwitch,
    CheckPolicy,
    EvidenceRule,
    HoldReason,
    Queue,
    ReasonCode,
)
from queue_app.services.access import hold_permission
from queue_app.services.automation import (
    STOP_PERMISSION,
    restart_automation,
    stop_automation,
)


class LabelledRowsFormSet(BaseInlineFormSet):
    """A tabular inline whose every field is named for a screen reader.

    The table's column headings are not labels of the inputs below them (axe: label,
    select-name): each input says its column and its row.
    """

    def add_fields(self, form: BaseForm, index: int | None) -> None:
        super().add_fields(form, index)
        row = "new row" if index is None else f"row {index + 1}"
        for name, field in form.fields.items():
            if field.widget.is_hidden:
                continue
            column = "Delete" if name == "DELETE" else (field.label or name)
            field.widget.attrs["aria-label"] = f"{column} ({row})"


class LabelledTabularInline(admin.TabularInline):
    """A tabular inline with LabelledRowsFormSet."""

    formset = LabelledRowsFormSet


class EvidenceRuleInline(LabelledTabularInline):
    """The queue's warnings on payload fields; each rule is checked when saved (model clean)."""

    model = EvidenceRule
    extra = 0
    fields = ("path", "test", "value", "message")
    verbose_name = "evidence warning rule"


class HoldReasonInline(LabelledTabularInline):
    """Why an item may wait: the closed set a reviewer picks from when holding."""

    model = HoldReason
    extra = 0
    fields = ("code", "label", "retired_at")
    verbose_name = "hold reason"


class CheckPolicyInline(LabelledTabularInline):
    """Maker-checker: which verdicts need a second person's check before their effect runs.

    Empty path: always. A path and a threshold: when the payload's number there is at or
    above it (compared exactly; a missing or non-numeric value needs a check too). Automatic
    decisions only: a person confirms the machine's decisions of the verdict, not people's.
    """

    model = CheckPolicy
    extra = 0
    fields = ("verdict", "path", "threshold", "machine_only")
    verbose_name = "maker-checker policy"
    verbose_name_plural = "maker-checker policies (decisions that need a checker)"


class StopSwitchAdmin(HeldPermissionAdmin):
    """An admin with actions that press a stop switch (services.automation)."""

    def has_stop_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(STOP_PERMISSION)

    def hold(self, request: HttpRequest, action: str) -> None:
        # The stop actions' permission is not one of the model's add/change/delete.
        if action != "stop":
            super().hold(request, action)
            return
        hold_permission(
            user=request.user,
            perm=STOP_PERMISSION,
            refusal="You no longer have permission to stop automatic decisions. "
            "Nothing was changed.",
        )


@admin.register(Queue)
class QueueAdmin(StopSwitchAdmin):
    form = QueueForm
    list_display = (
        "slug",
        "name",
        "lease_ttl",
        "escalation_threshold",
        "escalation_queue",
        "effect",
        "max_in_flight",
        "auto_decide_above",
        "automation_stopped_at",
    )
    list_select_related = ("escalation_queue",)
    search_fields = ("slug", "name")
    filter_horizontal = ("reviewer_groups",)
    inlines = (EvidenceRuleInline, HoldReasonInline, CheckPolicyInline)
    fieldsets = (
        (None, {"fields": ("slug", "name", "description")}),
        ("Leases", {"fields": ("lease_ttl", "max_in_flight", "release_skip")}),
        ("Evidence", {"fields": ("sensitive", "veil_blur", "veil_greyscale", "veil_autoplay")}),
        ("Escalation", {"fields": ("escalation_threshold", "escalation_queue")}),
        ("Deadlines and holds", {"fields": ("default_sla", "sla_warning", "max_hold")}),
        ("Effect", {"fields": ("effect", "webhook_url", "webhook_secret_env")}),
        ("Access", {"fields": ("reviewer_groups",)}),
        # Second-person controls: maker-checker policies are the inline below.
        ("QA sampling", {"fields": ("qa_rate",)}),
        (
            "Machine suggestions and automatic decisions",
            {
                "fields": (
                    "suggestion_display",
                    "auto_decide_above",
                    "auto_decide_user",
                    "auto_decide_qa_rate",
                    "automation_stopped_at",
                ),
                "description": (
                    "A suggestion at or above the confidence is taken as the decision of the "
                    "automation user when the item arrives; a share of those goes to blind QA, "
                    "and a maker-checker policy for automatic decisions only (below) makes a "
                    "person confirm them. The stop switch is pressed from the queue list's "
                    "actions or on /ops/."
                ),
            },
        ),
    )
    readonly_fields = ("automation_stopped_at",)
    actions = ("stop_queues", "restart_queues")

    @admin.action(description="Stop automatic decisions (people decide)", permissions=["stop"])
    def stop_queues(self, request: HttpRequest, queryset: QuerySet[Queue]) -> None:
        for queue in queryset:
            stop_automation(operator=request.user, queue=queue, url=request.path)
        self.message_user(
            request,
            f"Automatic decisions stopped in {len(queryset)} queue(s).",
            messages.WARNING,
        )

    @admin.action(description="Restart automatic decisions", permissions=["stop"])
    def restart_queues(self, request: HttpRequest, queryset: QuerySet[Queue]) -> None:
        count = sum(
            restart_automation(operator=request.user, queue=queue, url=request.path)
            for queue in queryset
        )
        self.message_user(
            request, f"Automatic decisions restarted in {count} queue(s).", messages.SUCCESS
        )


@admin.register(AutomationSwitch)
class AutomationSwitchAdmin(StopSwitchAdmin):
    """The stop switch for all queues: pressed by an action (the database's clock), never typed."""

    list_display = ("__str__", "stopped_at")
    readonly_fields = ("stopped_at",)
    actions = ("stop_all", "restart_all")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # one row, made by the migration

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or self.has_stop_permission(request)

    @admin.action(description="Stop automatic decisions in every queue", permissions=["stop"])
    def stop_all(self, request: HttpRequest, queryset: QuerySet[AutomationSwitch]) -> None:
        stop_automation(operator=request.user, url=request.path)
        self.message_user(request, "Automatic decisions stopped in every queue.", messages.WARNING)

    @admin.action(description="Restart automatic decisions in every queue", permissions=["stop"])
    def restart_all(self, request: HttpRequest, queryset: QuerySet[AutomationSwitch]) -> None:
        restart_automation(operator=request.user, url=request.path)
        self.message_user(request, "Automatic decisions restarted.", messages.SUCCESS)


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
