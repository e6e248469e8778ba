"""Console forms. They check shape only; the services enforce every queue rule again.

Every console and lane post is read through one of these, never from request.POST directly:
Django's CharField and ChoiceField refuse a NUL (PostgreSQL text cannot hold one) and values
outside their choices with a form error, before anything reaches the database.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, cast

from django import forms

from queue_app.datetimes import moment_problem
from queue_app.models import REVIEW_VERDICTS, ReasonCode
from queue_app.second_person import QA_VERDICTS
from queue_app.services import NOTE_MAX_LENGTH
from queue_app.services.lanes import RETURN_NEEDS_NOTE


class MomentField(forms.DateTimeField):
    """A date and time under the rule every time input follows (datetimes.moment_problem).

    Django reads an ISO offset before its input formats (and naive times in TIME_ZONE), so a
    form can be given any offset Python parses; the rule refuses what PostgreSQL would not.
    """

    def to_python(self, value: Any) -> datetime | None:
        """Parse the value, then refuse a moment outside the rule."""
        moment = super().to_python(value)
        if moment is not None and (problem := moment_problem(moment)):
            raise forms.ValidationError(f"The time {problem}.", code="invalid_moment")
        return moment


class LeaseForm(forms.Form):
    """The fence a release or renew names: the lease token from the page, never the URL."""

    lease_token = forms.UUIDField(
        widget=forms.HiddenInput,
        error_messages={
            "required": "This page carried no lease; open it again.",
            "invalid": "This page's lease is not valid; open it again.",
        },
    )


def _note_field(*, required: bool = False) -> forms.CharField:
    return forms.CharField(
        required=required,
        max_length=NOTE_MAX_LENGTH,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": RETURN_NEEDS_NOTE},
    )


class DecisionForm(LeaseForm):
    """A reviewer's verdict on one leased item, as posted by the item page."""

    evidence_hash = forms.RegexField(regex=r"^[0-9a-f]{64}$", widget=forms.HiddenInput)
    verdict = forms.ChoiceField(
        choices=[(v.value, v.label) for v in REVIEW_VERDICTS],
        widget=forms.RadioSelect,
        error_messages={"required": "Choose a verdict: approve, reject or escalate."},
    )
    reason_code = forms.SlugField(
        max_length=64, error_messages={"required": "Choose a reason for your verdict."}
    )
    note = _note_field()
    # Ticked when the page showed the evidence rules' warnings; the decide refuses an item
    # with warnings without it (services.submit_decision).
    warnings_seen = forms.BooleanField(required=False)
    # What the page showed of the machine suggestion, signed by the server
    # (services.suggestions.seen_token); empty: nothing was shown.
    suggestion_seen = forms.CharField(required=False, max_length=4000, widget=forms.HiddenInput)


class ReturnForm(LeaseForm):
    """A checker's return of the maker's decision: the note is what the maker reads."""

    note = _note_field(required=True)

    def clean_note(self) -> str:
        note = self.cleaned_data["note"]
        if not note.strip():
            raise forms.ValidationError(RETURN_NEEDS_NOTE)
        return note


class _ReasonChoiceForm(LeaseForm):
    """A lane form whose reason is one of the given codes (the queue's active ones)."""

    reason_code = forms.ChoiceField(required=False)
    note = _note_field()

    def __init__(self, data: Any, *, reasons: Iterable[ReasonCode]) -> None:
        super().__init__(data)
        self.reasons = {reason.code: reason for reason in reasons}
        # Declared as a ChoiceField by each form below.
        cast(forms.ChoiceField, self.fields["reason_code"]).choices = [("", "")] + [
            (code, reason.label) for code, reason in self.reasons.items()
        ]
        self.fields["reason_code"].error_messages["invalid_choice"] = (
            "That reason is not one of this queue's reasons; choose one from the list."
        )


class QaReviewForm(_ReasonChoiceForm):
    """A blind QA verdict with a reason of that verdict (reasons: the queue's QA reasons)."""

    verdict = forms.ChoiceField(
        choices=[(v, v.title()) for v in QA_VERDICTS],
        error_messages={"required": "Choose a verdict: approve or reject."},
    )

    def clean(self) -> dict[str, Any]:
        # Form.clean returns cleaned_data; the stubs allow None for overrides that return it.
        data = cast(dict[str, Any], super().clean())
        code, verdict = data.get("reason_code"), data.get("verdict")
        if not code and "reason_code" not in self.errors:
            self.add_error("reason_code", "Choose a reason for your verdict.")
        elif code and verdict and self.reasons[code].verdict != verdict:
            self.add_error(
                "reason_code",
                f"That is a reason to {self.reasons[code].verdict}; choose a reason to {verdict}.",
            )
        return data


class AdjudicationForm(_ReasonChoiceForm):
    """Uphold the original decision, overturn it with an overturn reason, or close it.

    Close is for an adjudication whose decision an overturn replaced since; the service and
    the database refuse it otherwise, and refuse the other two then.
    """

    outcome = forms.ChoiceField(
        choices=[("uphold", "Uphold"), ("overturn", "Overturn"), ("close", "Close")],
        error_messages={"required": "Choose uphold or overturn."},
    )

    def clean(self) -> dict[str, Any]:
        # Form.clean returns cleaned_data; the stubs allow None for overrides that return it.
        data = cast(dict[str, Any], super().clean())
        overturn = data.get("outcome") == "overturn"
        if overturn and not data.get("reason_code") and "reason_code" not in self.errors:
            self.add_error("reason_code", "An overturn needs a reason.")
        return data


class AppealForm(_ReasonChoiceForm):
    """Uphold the decision appealed, reverse it (the corrected verdict and an overturn reason),
    or close the appeal when an overturn replaced the decision while it waited. The reasons are
    required: the affected person's notice quotes them."""

    outcome = forms.ChoiceField(
        choices=[("uphold", "Uphold"), ("reverse", "Reverse"), ("close", "Close")],
        error_messages={"required": "Choose uphold or reverse."},
    )
    corrected_verdict = forms.ChoiceField(
        choices=[("", ""), ("approve", "Approve"), ("reject", "Reject")], required=False
    )
    note = _note_field(required=True)

    def clean(self) -> dict[str, Any]:
        data = cast(dict[str, Any], super().clean())
        if data.get("outcome") == "reverse":
            if not data.get("corrected_verdict") and "corrected_verdict" not in self.errors:
                self.add_error("corrected_verdict", "A reversal needs the corrected verdict.")
            if not data.get("reason_code") and "reason_code" not in self.errors:
                self.add_error("reason_code", "A reversal needs an overturn reason.")
        return data

    def clean_note(self) -> str:
        note = str(self.cleaned_data["note"])
        if not note.strip():
            raise forms.ValidationError(
                "Give the reasons: the affected person's notice quotes them."
            )
        return note


def form_errors(form: forms.Form) -> str:
    """The form's errors as one sentence for the page's message, ending in what happened."""
    words = [str(message) for errors in form.errors.values() for message in errors]
    return " ".join(words) + " Nothing was recorded."
