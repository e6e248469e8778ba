"""The stop switches of automatic decisions on /ops/: one per queue and one for all queues."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from queue_app.errors import NotPermitted
from queue_app.models import Queue
from queue_app.selectors.automation import read_automation
from queue_app.services.access import may_see_operations
from queue_app.services.automation import STOP_PERMISSION, restart_automation, stop_automation


class SwitchForm(forms.Form):
    """Which way a stop switch is pressed."""

    action = forms.ChoiceField(choices=[("stop", "Stop"), ("restart", "Restart")])


def automation_context(request: HttpRequest) -> dict[str, object]:
    """The switches panel (templates/ops/_automation.html)."""
    return {
        "automation": read_automation(),
        "may_stop_automation": request.user.has_perm(STOP_PERMISSION),
    }


def _press(request: HttpRequest, queue: Queue | None) -> HttpResponse:
    # Staff only, like the rest of /ops/, and the stop permission on top (the service asks it).
    if not may_see_operations(user=request.user):
        raise PermissionDenied("Operations pages are for staff.")
    form = SwitchForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose stop or restart.")
        return redirect("ops:dashboard")
    where = f"queue {queue.name}" if queue else "every queue"
    try:
        if form.cleaned_data["action"] == "stop":
            stop_automation(operator=request.user, queue=queue, url=request.path)
            messages.warning(
                request, f"Automatic decisions stopped for {where}: people decide every item."
            )
        elif restart_automation(operator=request.user, queue=queue, url=request.path):
            messages.success(request, f"Automatic decisions restarted for {where}.")
        else:
            messages.info(request, f"Automatic decisions were not stopped for {where}.")
    except NotPermitted as exc:
        raise PermissionDenied(str(exc)) from None
    return redirect("ops:dashboard")


@login_required
@require_POST
def press_queue_switch(request: HttpRequest, queue_id: int) -> HttpResponse:
    """Stop or restart one queue's automatic decisions."""
    return _press(request, get_object_or_404(Queue, pk=queue_id))


@login_required
@require_POST
def press_global_switch(request: HttpRequest) -> HttpResponse:
    """Stop or restart automatic decisions in every queue."""
    return _press(request, None)
