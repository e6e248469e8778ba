"""The hold form's view: put an item I hold on hold until a time I choose.

Same manners as views.py: fetch with permission (views._item_for, the one), validate shape,
call one service, redirect; the service enforces every rule again.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone

from queue_app.console.deadline_context import HoldForm
from queue_app.console.views import _item_for, console_view, post_only
from queue_app.errors import InvalidHoldReason, InvalidHoldTime, StaleLease
from queue_app.services import hold_item


@post_only
@console_view
def item_hold(request: HttpRequest, item_id: int) -> HttpResponse:
    """Put an item I hold on hold; it comes back by itself at the time I chose."""
    item = _item_for(request, item_id)
    form = HoldForm(request.POST)
    if not form.is_valid():
        if "lease_token" in form.errors:
            messages.error(request, StaleLease.message)
        else:
            first = next(iter(form.errors.values()))[0]
            messages.error(request, f"Not put on hold: {first}")
        return redirect("item", item_id=item.pk)
    data = form.cleaned_data
    try:
        held = hold_item(
            item_id=item.pk,
            reviewer=request.user,
            lease_token=data["lease_token"],
            reason_code=data["reason_code"],
            hold_until=data["hold_until"],
        )
    except (StaleLease, InvalidHoldReason, InvalidHoldTime) as exc:
        messages.error(request, f"Not put on hold: {exc.message}")
        return redirect("item", item_id=item.pk)
    until = timezone.localtime(held["hold_until"]).strftime("%Y-%m-%d %H:%M %Z")
    # A second submission of a hold that went through (a double click, a resent form) is
    # answered with what the first did (services.hold_item): it may have ended since.
    if held["hold_ended"]:
        messages.info(
            request,
            f"Item #{item.pk} was put on hold until {until} by your earlier submission; "
            "that hold has ended since.",
        )
        return redirect("home")
    messages.success(
        request,
        f"Item #{item.pk} is on hold until {until}; it comes back to {item.queue.name} by itself "
        "then, or as soon as its evidence is replaced. Its deadline is paused meanwhile.",
    )
    return redirect("home")
