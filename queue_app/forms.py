"""Console forms. They check shape only; the services enforce every queue rule again."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms

from queue_app.datetimes import moment_problem
from queue_app.models import REVIEW_VERDICTS
from queue_app.services import NOTE_MAX_LENGTH


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

    lease_token = forms.UUIDField(widget=forms.HiddenInput)


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
    note = forms.CharField(
        required=False,
        max_length=NOTE_MAX_LENGTH,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
