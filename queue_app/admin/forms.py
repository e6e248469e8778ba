"""Forms behind the admin: the overturn form and queue configuration checks."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from django import forms

from queue_app import effects
from queue_app.models import (
    CORRECTED_VERDICTS,
    Decision,
    Queue,
    ReasonCode,
    SuggestionDisplay,
    VeilBlur,
    Verdict,
)
from queue_app.services import NOTE_MAX_LENGTH, reason_codes_for


class OverturnForm(forms.Form):
    """Corrected verdict, an overturn reason from the queue's closed set, and a note."""

    # Every field is required: the labels say so and the inputs carry `required`, so the
    # browser asks before anything is posted (the server checks again regardless).
    required_css_class = "required"

    corrected_verdict = forms.ChoiceField(
        label="Corrected verdict",
        choices=[(v.value, v.label) for v in CORRECTED_VERDICTS],
        widget=forms.RadioSelect,
        help_text="The verdict that stands once this overturn is recorded.",
    )
    reason_code = forms.ModelChoiceField(
        label="Overturn reason",
        queryset=ReasonCode.objects.none(),
        # Nothing preselected: the admin chooses (and the browser asks, `required`).
        empty_label="Choose an overturn reason…",
        help_text="From this queue's active overturn reasons.",
    )
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60}),
        max_length=NOTE_MAX_LENGTH,
        help_text="Why: what the reviewer missed, or what new information arrived.",
    )

    def __init__(self, *args: Any, decision: Decision, **kwargs: Any) -> None:
        # Offer the verdict that does not stand now: overturning to the same one is refused.
        opposite = Verdict.REJECT if decision.standing_verdict == Verdict.APPROVE else "approve"
        kwargs.setdefault("initial", {"corrected_verdict": opposite})
        super().__init__(*args, **kwargs)
        reasons = reason_codes_for(queue=decision.queue_id, verdict=Verdict.OVERTURN)
        field = cast(forms.ModelChoiceField, self.fields["reason_code"])  # as declared above
        field.queryset = reasons.order_by("label")

        def label(reason: ReasonCode) -> str:
            return f"{reason.label} ({reason.code})"

        # Set on the instance, in place of the method: Django calls it with the reason alone.
        field.label_from_instance = label  # type: ignore[method-assign, assignment]


class QueueForm(forms.ModelForm):
    """Queue configuration; the model's constraints are checked too (ModelForm validation)."""

    webhook_url = forms.URLField(
        required=False,
        max_length=200,
        assume_scheme="https",
        help_text="Where the webhook effect POSTs each decision (signed).",
    )

    effect = forms.ChoiceField(
        choices=(),
        initial="log",
        help_text="What the apply worker does with each decision: a built-in (log, webhook, "
        "escalate) or an effect the deployment registered in REVIEW_EFFECTS.",
        error_messages={
            "invalid_choice": "%(value)s is not an allowed effect: pick one of the list, or "
            "register it in the REVIEW_EFFECTS setting first."
        },
    )

    class Meta:
        model = Queue
        fields = (
            "slug",
            "name",
            "description",
            "lease_ttl",
            "max_in_flight",
            "release_skip",
            "escalation_threshold",
            "escalation_queue",
            "effect",
            "webhook_url",
            "webhook_secret_env",
            "reviewer_groups",
            "suggestion_display",
            "auto_decide_above",
            "auto_decide_user",
            "auto_decide_qa_rate",
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only effects on the allow-list can be picked: a queue setting must never be
        # a way to run arbitrary code in the apply worker. A row naming a registered dotted
        # path (written before names existed) keeps its value selectable.
        names = effects.allowed_names()
        current = self.instance.effect if self.instance.pk else ""
        if current and current not in names and effects.is_allowed(current):
            names.append(current)
        effect = cast(forms.ChoiceField, self.fields["effect"])  # as declared above
        effect.choices = [(name, name) for name in names]
        # Left out of a post (a script's, an older page's): the model's defaults, as before
        # these settings existed, rather than an error about a field it never sent.
        for name in ("suggestion_display", "auto_decide_qa_rate", "veil_blur"):
            if name in self.fields:
                self.fields[name].required = False

    def clean_suggestion_display(self) -> str:
        return self.cleaned_data.get("suggestion_display") or SuggestionDisplay.ON_REQUEST

    def clean_veil_blur(self) -> str:
        return self.cleaned_data.get("veil_blur") or VeilBlur.HIGH

    def clean_auto_decide_qa_rate(self) -> Decimal:
        rate = self.cleaned_data.get("auto_decide_qa_rate")
        return Decimal(0) if rate is None else rate

    def clean(self) -> dict[str, Any]:
        # ModelForm.clean returns cleaned_data; the stubs allow None for overrides.
        cleaned = cast(dict[str, Any], super().clean())
        if cleaned.get("effect") == "webhook" and not cleaned.get("webhook_url"):
            self.add_error("webhook_url", "A webhook effect needs the URL to POST to.")
        escalation = cleaned.get("escalation_queue")
        if escalation is not None and self.instance.pk and escalation.pk == self.instance.pk:
            self.add_error("escalation_queue", "A queue cannot escalate to itself.")
        self._clean_automation(cleaned)
        return cleaned

    def _clean_automation(self, cleaned: dict[str, Any]) -> None:
        # The database refuses the same (queue_auto_decide_complete); said here field by field.
        threshold = cleaned.get("auto_decide_above")
        rate = cleaned.get("auto_decide_qa_rate")
        if rate is not None and not 0 <= rate <= 100:
            self.add_error("auto_decide_qa_rate", "A percentage: from 0 to 100.")
        if threshold is None:
            return
        if not 0 < threshold <= 1:
            self.add_error(
                "auto_decide_above",
                "A confidence above 0 and at most 1 (0.95: suggestions of 95 % or more). "
                "Leave it empty for people to decide everything.",
            )
        if cleaned.get("auto_decide_user") is None and "auto_decide_user" not in self.errors:
            self.add_error(
                "auto_decide_user",
                "Automatic decisions are recorded under a service user: choose one.",
            )
        elif (
            cleaned.get("auto_decide_user") is not None
            and not cleaned["auto_decide_user"].is_active
        ):
            self.add_error(
                "auto_decide_user",
                "That user is deactivated: it would decide nothing. Choose an active one.",
            )
        if rate is not None and rate <= 0 and "auto_decide_qa_rate" not in self.errors:
            self.add_error(
                "auto_decide_qa_rate",
                "Automatic decisions need a QA sample above 0 %: people review a share of them "
                "blind, which is how their quality is known.",
            )


def reason_code_in_use(reason: ReasonCode) -> bool:
    """Whether any decision names this reason code (its wording is then frozen)."""
    return Decision.objects.filter(reason_code_id=reason.pk).exists()


class ReasonCodeForm(forms.ModelForm):
    """A reason code: its label changes only until a decision uses it, and at most one safe
    default per queue and verdict, said in words.

    The database enforces both (the reasoncode_frozen_once_used trigger and the
    reasoncode_one_default_per_verdict index); queue and verdict are read-only on an existing
    code, so the model's own constraint check would skip the second here.
    """

    class Meta:
        model = ReasonCode
        fields = ("queue", "verdict", "code", "label", "is_default")

    def clean(self) -> dict[str, Any]:
        # ModelForm.clean returns cleaned_data; the stubs allow None for overrides.
        cleaned = cast(dict[str, Any], super().clean())
        # The page offered the label while the code was unused; a decision may have used it
        # since. Refuse here, with a message, rather than at the database's trigger.
        if (
            self.instance.pk is not None
            and "label" in self.changed_data
            and reason_code_in_use(self.instance)
        ):
            self.add_error(
                "label",
                "Decisions already use this code, so its label is frozen: past decisions show "
                "the wording they were made with. Retire it and add a new code instead.",
            )
        queue_id = cleaned["queue"].pk if cleaned.get("queue") else self.instance.queue_id
        verdict = cleaned.get("verdict") or self.instance.verdict
        if cleaned.get("is_default") and queue_id and verdict:
            other = (
                ReasonCode.objects.filter(queue_id=queue_id, verdict=verdict, is_default=True)
                .select_related("queue")
                .exclude(pk=self.instance.pk)
                .first()
            )
            if other is not None:
                self.add_error(
                    "is_default",
                    f"{other.queue} already has a safe default reason for this verdict: "
                    f"{other.label} ({other.code}). Unmark it first.",
                )
        return cleaned
