"""The machine suggestion on the item page, and what a decision's maker saw of one.

The item page shows a suggestion as its queue says (SuggestionDisplay): with the evidence, on
request, or not at all; never to a blind QA reviewer and never as a choice made in the form.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from queue_app.models import ReasonCode, ReviewItem, SuggestionDisplay, SuggestionView
from queue_app.services.suggestions import Seen, seen_token

_REVEALED = (SuggestionView.REVEALED_BEFORE_CHOICE, SuggestionView.REVEALED_AFTER_CHOICE)


def suggestion_for_page(suggestion: dict[str, Any], reasons: Iterable[ReasonCode]) -> dict:
    """The suggestion with its reason's label and its confidence as a percentage."""
    label = next(
        (
            r.label
            for r in reasons
            if r.verdict == suggestion["verdict"] and r.code == suggestion["reason_code"]
        ),
        suggestion["reason_code"],
    )
    return {
        **suggestion,
        "reason_label": label,
        "explanation": suggestion.get("explanation") or [],
    }


def suggestion_context(
    item: ReviewItem, reasons: Iterable[ReasonCode], *, mine: bool, blind: bool, seen: Seen
) -> dict[str, Any]:
    """What console/_suggestion.html needs: the suggestion if it is on the page, whether a
    reveal is offered, and the signed record of what was seen for the decision form."""
    if item.suggestion is None or blind:
        return {"suggestion": None, "suggestion_reveal": False, "suggestion_seen": ""}
    display = item.queue.suggestion_display
    on_page = display == SuggestionDisplay.SHOWN or (mine and seen.view in _REVEALED)
    return {
        "suggestion": suggestion_for_page(item.suggestion, reasons) if on_page else None,
        # Hidden until asked for, or until a verdict is chosen (console.js): only its holder
        # may ask, under the lease.
        "suggestion_reveal": mine and display == SuggestionDisplay.ON_REQUEST and not on_page,
        "suggestion_seen": (
            seen_token(item_id=item.pk, lease_token=item.lease_token or "", seen=seen)
            if mine
            else ""
        ),
    }
