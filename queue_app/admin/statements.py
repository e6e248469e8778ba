"""Statements of reasons: a queue's policy and its reasons' mappings, refused when the contract
would refuse their statements, and the statements built (read-only).

At save time the form builds the statement a decision would get (services.statements) and runs
the Transparency Database's contract on it; the contract's refusals are shown on the fields
that cause them, and nothing is saved.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from queue_app.admin.base import HeldPermissionAdmin, ReadOnlyAdmin
from queue_app.admin.pagination import CappedCountAdmin
from queue_app.models import (
    Queue,
    ReasonCode,
    ReasonMapping,
    StatementDelivery,
    StatementOfReasons,
    StatementPolicy,
)
from queue_app.services import retry_statement_deliveries
from queue_app.services import statements as statements_service
from queue_app.transparency.contract import labels

#: Which form field a contract field's refusal belongs on; others go above the form.
POLICY_FIELDS = {
    "decision_visibility": "decision_visibility",
    "decision_visibility_other": "decision_visibility_other",
    "decision_monetary": "decision_monetary",
    "decision_monetary_other": "decision_monetary_other",
    "decision_provision": "decision_provision",
    "decision_account": "decision_account",
    "account_type": "account_type",
    "territorial_scope": "territorial_scope",
    "content_type": "content_type",
    "content_type_other": "content_type_other",
    "content_language": "content_language",
    "source_type": "source_type",
    "source_identity": "source_identity",
    "puid": "puid_template",
    "end_date_visibility_restriction": "restriction_duration",
    "end_date_monetary_restriction": "restriction_duration",
    "end_date_service_restriction": "restriction_duration",
    "end_date_account_restriction": "restriction_duration",
}
MAPPING_FIELDS = {
    "decision_ground": "decision_ground",
    "illegal_content_legal_ground": "ground",
    "incompatible_content_ground": "ground",
    "incompatible_content_illegal": "incompatible_content_illegal",
    "decision_ground_reference_url": "reference_url",
    "category": "category",
    "category_addition": "category_addition",
    "category_specification": "keywords",
    "category_specification_other": "keyword_other",
    "illegal_content_explanation": "explanation_template",
    "incompatible_content_explanation": "explanation_template",
    "decision_facts": "explanation_template",
    "template": "explanation_template",
}


def _choices(enumeration: str, *, blank: bool = False) -> list[tuple[str, str]]:
    pairs = sorted(labels(enumeration).items(), key=lambda pair: pair[1])
    return ([("", "—")] if blank else []) + pairs


def _show(form: forms.ModelForm, errors: dict[str, list[str]], fields: dict[str, str]) -> None:
    for field, reasons in sorted(errors.items()):
        target = fields.get(field)
        for reason in reasons:
            if target in form.fields:
                form.add_error(target, reason)
            else:
                form.add_error(None, f"{field}: {reason}")


class StatementPolicyForm(forms.ModelForm):
    decision_visibility = forms.TypedMultipleChoiceField(
        choices=(), required=False, widget=forms.CheckboxSelectMultiple
    )
    decision_monetary = forms.ChoiceField(choices=(), required=False)
    decision_provision = forms.ChoiceField(choices=(), required=False)
    decision_account = forms.ChoiceField(choices=(), required=False)
    account_type = forms.ChoiceField(choices=(), required=False)
    territorial_scope = forms.TypedMultipleChoiceField(choices=(), required=False)
    content_type = forms.TypedMultipleChoiceField(
        choices=(), required=False, widget=forms.CheckboxSelectMultiple
    )
    content_language = forms.ChoiceField(choices=(), required=False)
    source_type = forms.ChoiceField(choices=())

    class Meta:
        model = StatementPolicy
        fields = [
            f.name
            for f in StatementPolicy._meta.concrete_fields
            if f.editable and not f.primary_key
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        fields: dict[str, Any] = self.fields
        # A viewer's form (view-only admin) has none of these fields: they are read-only.
        choices = {
            "decision_visibility": _choices("DECISION_VISIBILITIES"),
            "decision_monetary": _choices("DECISION_MONETARIES", blank=True),
            "decision_provision": _choices("DECISION_PROVISIONS", blank=True),
            "decision_account": _choices("DECISION_ACCOUNTS", blank=True),
            "account_type": _choices("ACCOUNT_TYPES", blank=True),
            "territorial_scope": [(code, code) for code in labels("EUROPEAN_COUNTRY_CODES")],
            "content_type": _choices("CONTENT_TYPES"),
            "content_language": _choices("LANGUAGES", blank=True),
            "source_type": _choices("SOURCE_TYPES"),
        }
        for name, values in choices.items():
            if name in fields:
                fields[name].choices = values
        for name in ("appeal_window_months", "appeal_decide_within"):
            if name in fields:
                # Left empty: the default (six months; two weeks), so a form without it saves.
                fields[name].required = False

    def clean_appeal_window_months(self) -> int:
        value = self.cleaned_data.get("appeal_window_months")
        if value is None:
            default = StatementPolicy._meta.get_field("appeal_window_months").get_default()
            return int(default)
        return int(value)

    def clean_appeal_decide_within(self) -> timedelta:
        value = self.cleaned_data.get("appeal_decide_within")
        if value is None:
            return cast(
                timedelta, StatementPolicy._meta.get_field("appeal_decide_within").get_default()
            )
        if value <= timedelta(0):
            raise forms.ValidationError("An appeal needs some time to be decided in.")
        return cast(timedelta, value)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        queue = cleaned.get("queue")
        if self.errors or not isinstance(queue, Queue):
            return cleaned
        if not cleaned.get("restricts"):
            return cleaned  # no statements: nothing for the contract to refuse
        candidate = StatementPolicy(
            **{
                name: value
                for name, value in cleaned.items()
                if name in {f.name for f in StatementPolicy._meta.concrete_fields}
            }
        )
        _show(
            self,
            statements_service.policy_errors(policy=candidate, queue=queue),
            POLICY_FIELDS,
        )
        return cleaned


class ReasonMappingForm(forms.ModelForm):
    decision_ground = forms.ChoiceField(choices=())
    incompatible_content_illegal = forms.ChoiceField(
        choices=[("", "—"), ("Yes", "Yes"), ("No", "No")], required=False
    )
    category = forms.ChoiceField(choices=())
    reference_url = forms.URLField(
        max_length=500,
        required=False,
        assume_scheme="https",
        help_text=ReasonMapping._meta.get_field("reference_url").help_text,
    )
    category_addition = forms.TypedMultipleChoiceField(choices=(), required=False)
    keywords = forms.TypedMultipleChoiceField(choices=(), required=False)

    class Meta:
        model = ReasonMapping
        fields = [
            "reason_code",
            "decision_ground",
            "ground",
            "incompatible_content_illegal",
            "reference_url",
            "category",
            "category_addition",
            "keywords",
            "keyword_other",
            "explanation_template",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        fields: dict[str, Any] = self.fields
        # A viewer's form (view-only admin) has none of these fields: they are read-only.
        choices = {
            "decision_ground": _choices("DECISION_GROUNDS"),
            "category": _choices("STATEMENT_CATEGORIES"),
            "category_addition": _choices("STATEMENT_CATEGORIES"),
            "keywords": _choices("KEYWORDS"),
        }
        for name, values in choices.items():
            if name in fields:
                fields[name].choices = values
        if "reason_code" in fields:
            fields["reason_code"].queryset = ReasonCode.objects.select_related("queue")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        reason = cleaned.get("reason_code")
        if self.errors or not isinstance(reason, ReasonCode):
            return cleaned
        policy = StatementPolicy.objects.filter(queue_id=reason.queue_id).first()
        if policy is None:
            self.add_error(
                "reason_code", "Its queue has no statement policy yet: give it one first."
            )
            return cleaned
        candidate = ReasonMapping(
            queue_id=reason.queue_id,
            **{
                name: value
                for name, value in cleaned.items()
                if name in {f.name for f in ReasonMapping._meta.concrete_fields}
            },
        )
        errors = statements_service.sample_errors(
            policy=policy,
            mapping=candidate,
            queue_slug=reason.queue.slug,
            reason_label=reason.label,
        )
        _show(self, errors, MAPPING_FIELDS)
        return cleaned

    def save(self, commit: bool = True) -> Any:
        self.instance.queue_id = self.instance.reason_code.queue_id
        return super().save(commit)


@admin.register(StatementPolicy)
class StatementPolicyAdmin(HeldPermissionAdmin):
    form = StatementPolicyForm
    list_display = ("queue", "restricts", "restricting_verdict", "source_type", "puid_template")
    list_select_related = ("queue",)
    fieldsets = (
        (None, {"fields": ("queue", "restricts", "restricting_verdict")}),
        (
            "What is restricted (at least one kind)",
            {
                "fields": (
                    "decision_visibility",
                    "decision_visibility_other",
                    "decision_monetary",
                    "decision_monetary_other",
                    "decision_provision",
                    "decision_account",
                    "account_type",
                    "restriction_duration",
                    "territorial_scope",
                )
            },
        ),
        (
            "Content and source",
            {
                "fields": (
                    "content_type",
                    "content_type_other",
                    "content_language",
                    "content_date_key",
                    "source_type",
                    "source_identity",
                )
            },
        ),
        ("Statement identity", {"fields": ("puid_template",)}),
        (
            "Redress, as the affected person's notice says",
            {
                "fields": (
                    "appeal_window_months",
                    "appeal_decide_within",
                    "out_of_court_settlement",
                )
            },
        ),
    )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # statements name it; switch "restricts" off instead


@admin.register(ReasonMapping)
class ReasonMappingAdmin(HeldPermissionAdmin):
    form = ReasonMappingForm
    list_display = ("reason_code", "queue", "decision_ground", "category")
    list_select_related = ("reason_code", "queue")
    list_filter = ("queue",)


@admin.register(StatementOfReasons)
class StatementOfReasonsAdmin(CappedCountAdmin, ReadOnlyAdmin):
    """Statements as built: the failing ones (the contract refused them) first to fix."""

    list_display = ("puid", "kind", "decision", "is_valid", "created_at")
    list_filter = ("kind",)
    search_fields = ("puid",)
    fields = ("puid", "kind", "decision", "replaces", "body", "sha256", "errors", "created_at")
    readonly_fields = fields

    @admin.display(boolean=True, description="valid")
    def is_valid(self, statement: StatementOfReasons) -> bool:
        return statement.valid


class DeliveryStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("dead", "Dead"), ("waiting", "Waiting"), ("done", "Done")]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[StatementDelivery]
    ) -> QuerySet[StatementDelivery]:
        if self.value() == "dead":
            return queryset.filter(dead=True, done_at__isnull=True)
        if self.value() == "waiting":
            return queryset.filter(dead=False, done_at__isnull=True)
        if self.value() == "done":
            return queryset.filter(done_at__isnull=False)
        return queryset


@admin.register(StatementDelivery)
class StatementDeliveryAdmin(CappedCountAdmin, ReadOnlyAdmin):
    """Notices and Transparency Database submissions: the dead ones, with why, to retry."""

    list_display = (
        "statement",
        "channel",
        "status",
        "attempts",
        "next_attempt_at",
        "last_error",
        "done_at",
    )
    list_select_related = ("statement",)
    list_filter = (DeliveryStatusFilter, "channel")
    search_fields = ("statement__puid",)
    ordering = ("-created_at",)
    show_full_result_count = False
    actions = ("retry",)

    @admin.display(description="status")
    def status(self, job: StatementDelivery) -> str:
        return job.status.upper() if job.status == "dead" else job.status

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("queue_app.change_statementdelivery")

    @admin.action(description="Retry selected dead deliveries", permissions=["retry"])
    def retry(self, request: HttpRequest, queryset: QuerySet[StatementDelivery]) -> None:
        revived = retry_statement_deliveries(
            delivery_ids=queryset.values_list("pk", flat=True), operator=request.user
        )
        skipped = queryset.count() - revived
        note = f" {skipped} were not dead and were left alone." if skipped else ""
        self.message_user(request, f"Put {revived} dead delivery(ies) back in line.{note}")
