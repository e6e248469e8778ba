"""What a decision's maker saw of the machine suggestion, in the words every surface uses."""

from __future__ import annotations

from typing import Any

from queue_app.models import SuggestionView

AUTOMATIC_WORDS = "Automatic (machine)"


def seen_words(view: str | None, followed: bool | None) -> str:
    """Say what the maker saw of the suggestion and whether the verdict followed it.

    "" for a decision without one (the item had none, or an overturn).
    """
    if view is None:
        return ""
    if view == SuggestionView.AUTOMATIC:
        return AUTOMATIC_WORDS
    return f"{SuggestionView(view).label}; {'followed' if followed else 'not followed'}"


def decision_seen_words(decision: Any) -> str:
    """seen_words of a Decision (or anything with its two columns)."""
    return seen_words(decision.suggestion_view, decision.suggestion_followed)
