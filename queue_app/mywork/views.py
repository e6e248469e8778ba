"""My work: a reviewer's page of their own decisions, handling time, leases and a search."""

from __future__ import annotations

from datetime import date

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from queue_app.console.views import console_view
from queue_app.selectors.my_work import (
    SEARCH_LIMIT,
    SUBJECT_SEARCH_DAYS,
    SUBJECT_SEARCH_SCOPE,
    my_work,
    search_my_decisions,
    subject_search_reach,
)
from queue_app.services import signed_in_id

EARLIEST_DAY = date(1970, 1, 1)
LATEST_DAY = date(9999, 12, 30)


class SearchForm(forms.Form):
    """Find one of my decisions again: by the item's subject, its id, or the day."""

    subject = forms.CharField(required=False, max_length=200, strip=True, label="Subject words")
    item = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1, label="Item number")
    day = forms.DateField(
        required=False,
        label="Decided on",
        widget=forms.DateInput(attrs={"type": "date"}),
        error_messages={"invalid": "Enter a date as YYYY-MM-DD."},
    )

    def clean_day(self) -> date | None:
        day = self.cleaned_data["day"]
        # The day's end is computed as an instant: the calendar's last day has none.
        if day is not None and not (EARLIEST_DAY <= day <= LATEST_DAY):
            raise forms.ValidationError(
                f"Enter a date between {EARLIEST_DAY.isoformat()} and {LATEST_DAY.isoformat()}."
            )
        return day

    def is_search(self) -> bool:
        return any(self.data.get(name) for name in self.fields)


@require_GET
@console_view
def my_work_page(request: HttpRequest) -> HttpResponse:
    """Show my decisions today, over 7 and 30 days, my handling time, my leases, and a search."""
    now = timezone.now()
    form = SearchForm(request.GET or None)
    results = None
    reach = None
    if form.is_bound and form.is_search() and form.is_valid():
        data = form.cleaned_data
        results = list(
            search_my_decisions(
                reviewer_id=signed_in_id(request.user),
                subject=data["subject"] or "",
                item_id=data["item"],
                day=data["day"],
                now=now,
            )
        )
        subject_alone = data["subject"] and not data["item"] and not data["day"]
        if subject_alone and len(results) < SEARCH_LIMIT:
            # The whole scope was read: say whether it reached the window's start.
            reach = subject_search_reach(reviewer_id=signed_in_id(request.user), now=now)
    return render(
        request,
        "console/my_work.html",
        {
            "title": "My work",
            "work": my_work(reviewer_id=signed_in_id(request.user), now=now),
            "now": now,
            "form": form,
            "results": results,
            "search_limit": SEARCH_LIMIT,
            "subject_days": SUBJECT_SEARCH_DAYS,
            "subject_scope": SUBJECT_SEARCH_SCOPE,
            "reach": reach,
        },
    )
