"""The access history in the admin: a read-only timeline with filters, and its CSV export.

Who may read it: whoever may view users (auth.view_user; superusers). It says who holds which
access, which is itself worth guarding.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import datetime, time, timedelta
from typing import Any, cast

from django import forms
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from queue_app.exports import neutralise_formula
from queue_app.models import Queue
from queue_app.selectors.access_timeline import HistoryRow, describe, history_events

PAGE_SIZE = 100
CSV_CHUNK = 500
CSV_COLUMNS = ("at", "kind", "action", "subject", "change", "by", "trace_id")
PERMISSION = "auth.view_user"


class HistoryFilter(forms.Form):
    user = forms.CharField(required=False, max_length=150, help_text="Changes about this username.")
    by = forms.CharField(required=False, max_length=150, help_text="Changes made by this username.")
    queue = forms.SlugField(required=False, max_length=64, help_text="Queue slug.")
    since = forms.DateField(required=False, help_text="From this day (YYYY-MM-DD).")
    until = forms.DateField(required=False, help_text="To this day, inclusive.")

    def _user(self, field: str) -> User | None:
        name = self.cleaned_data.get(field)
        if not name:
            return None
        try:
            return User.objects.get(username=name)
        except User.DoesNotExist:
            raise forms.ValidationError({field: f"No user is named {name!r}."}) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        data["user_obj"] = self._user("user")
        data["by_obj"] = self._user("by")
        if slug := data.get("queue"):
            try:
                data["queue_obj"] = Queue.objects.get(slug=slug)
            except Queue.DoesNotExist:
                raise forms.ValidationError({"queue": f"No queue is named {slug!r}."}) from None
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("The first day comes after the last.")
        return data

    def events(self) -> Any:
        data = self.cleaned_data
        zone = timezone.get_current_timezone()
        since = data.get("since")
        until = data.get("until")
        return history_events(
            user=data.get("user_obj"),
            actor=data.get("by_obj"),
            queue=data.get("queue_obj"),
            since=datetime.combine(since, time.min, zone) if since else None,
            until=datetime.combine(until + timedelta(days=1), time.min, zone) if until else None,
        )


def _allowed(request: HttpRequest) -> None:
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied("Reading the access history needs permission to view users.")


def access_history(request: HttpRequest) -> HttpResponse:
    """The timeline, newest first, 100 to a page."""
    _allowed(request)
    form = HistoryFilter(request.GET or None)
    rows: list[HistoryRow] = []
    page = None
    status = 200
    if not request.GET or form.is_valid():
        if not request.GET:
            form = HistoryFilter({})
            form.is_valid()
        paginator = Paginator(form.events(), PAGE_SIZE)
        page = paginator.get_page(request.GET.get("page"))
        rows = list(describe(page.object_list))
    else:
        status = 400
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        **admin.site.each_context(request),
        "title": "Access history",
        "form": form,
        "rows": rows,
        "page": page,
        "query": query.urlencode(),
    }
    return render(request, "admin/access_history.html", context, status=status)


def _csv_lines(events: Any) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    yield buffer.getvalue()
    paginator = Paginator(events, CSV_CHUNK)
    for number in paginator.page_range:
        buffer.seek(0)
        buffer.truncate()
        for row in describe(paginator.page(number).object_list):
            writer.writerow(
                [row.at.isoformat()]
                + [neutralise_formula(getattr(row, c)) for c in CSV_COLUMNS[1:]]
            )
        yield buffer.getvalue()


def access_history_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The filtered timeline as CSV (formula cells neutralised, as the decision export)."""
    _allowed(request)
    form = HistoryFilter(request.GET)
    if not form.is_valid():
        errors = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in form.errors.items())
        return HttpResponse(errors, status=400, content_type="text/plain; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response = StreamingHttpResponse(_csv_lines(form.events()), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="access-history-{stamp}.csv"'
    return response


def reset_second_factor_view(request: HttpRequest, user_id: int) -> HttpResponse:
    """Remove another user's second-factor devices (a lost phone); recorded in the history."""
    from django.contrib import messages
    from django.shortcuts import get_object_or_404, redirect
    from django.urls import reverse

    from queue_app.identity.mfa import reset_second_factor

    if not request.user.has_perm("auth.change_user"):
        raise PermissionDenied("Resetting a second factor needs permission to change users.")
    target = get_object_or_404(User, pk=user_id)
    change_url = reverse("admin:auth_user_change", args=[target.pk])
    if request.method != "POST":
        context = {
            **admin.site.each_context(request),
            "title": "Reset second factor",
            "target": target,
            "change_url": change_url,
        }
        return render(request, "admin/mfa_reset.html", context)
    if target.pk == request.user.pk:
        messages.error(request, "Another administrator must reset your own second factor.")
        return redirect(change_url)
    # Signed in, with auth.change_user (above): not anonymous.
    removed = reset_second_factor(user=target, by=cast(User, request.user))
    messages.success(
        request,
        f"Removed {removed} second-factor device(s) of {target.get_username()}: they enrol "
        "again at their next sign-in.",
    )
    return redirect(change_url)
