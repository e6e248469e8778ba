"""Reveal an item's machine suggestion on request, under the lease, and record that it was."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect

from queue_app.console.suggestion_display import suggestion_for_page
from queue_app.console.views import (
    _item_for,
    _render_item,
    console_view,
    heartbeat_refused,
    post_only,
    wants_json,
)
from queue_app.errors import InvalidSuggestion, StaleLease
from queue_app.forms import LeaseForm
from queue_app.models import REVIEW_VERDICTS, ReasonCode
from queue_app.services.suggestions import reveal_suggestion


class RevealForm(LeaseForm):
    """The lease the reveal is fenced by, and the verdict chosen before it, if any."""

    chosen_verdict = forms.ChoiceField(
        required=False, choices=[("", "")] + [(v.value, v.label) for v in REVIEW_VERDICTS]
    )


@post_only
@console_view
def item_suggestion_reveal(request: HttpRequest, item_id: int) -> HttpResponse:
    """Show the lease holder the suggestion: JSON for the page's script, the page otherwise."""
    as_json = wants_json(request)
    item = _item_for(request, item_id)  # the item page's access rule, and its 404
    form = RevealForm(request.POST)
    try:
        if not form.is_valid():
            raise StaleLease()
        revealed = reveal_suggestion(
            item_id=item.pk,
            reviewer=request.user,
            lease_token=form.cleaned_data["lease_token"],
            chosen_verdict=form.cleaned_data["chosen_verdict"] or None,
        )
    except (StaleLease, InvalidSuggestion) as exc:
        if as_json:
            return heartbeat_refused(exc.message, 409)
        messages.error(request, exc.message)
        return redirect("item", item_id=item.pk)
    if not as_json:
        # Without the script: the page again, with the suggestion on it and in the form.
        return _render_item(request, item, seen=revealed.seen)
    reasons = ReasonCode.objects.filter(queue_id=item.queue_id)
    return JsonResponse(
        {
            "ok": True,
            "suggestion": suggestion_for_page(revealed.suggestion, reasons),
            "view": revealed.seen.view,
            "shown_at": revealed.seen.shown_at.isoformat() if revealed.seen.shown_at else None,
            "seen": revealed.token,
        }
    )
