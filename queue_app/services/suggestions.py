"""Machine suggestions: checked at intake, revealed on request, and what a reviewer saw of one.

A suggestion is evidence the item arrives with (its hash covers it); the queue's display
policy says whether the item page shows it with the evidence, on request, or not at all. What
the maker saw travels in the decision form as a signed value (seen_token) the server issued:
the page cannot claim a view it was not given, and the decide reads it without a query.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core import signing
from django.db import transaction
from django.utils import timezone

from queue_app.errors import InvalidSuggestion, SuggestionSeenInvalid
from queue_app.jsonutil import number_from_text, number_in_bounds
from queue_app.models import (
    ItemEvent,
    ItemEventKind,
    ItemState,
    Queue,
    ReviewItem,
    SuggestionDisplay,
    SuggestionView,
    Verdict,
)
from queue_app.services._common import User, parse_token
from queue_app.services.decisions import reason_codes_for
from queue_app.services.leases import explain_stale_lease

# Bounds of a suggestion, declared once: the API schema documents these, this module enforces
# them for every caller (the API, seeding, commands).
MODEL_NAME_MAX = 200
MODEL_VERSION_MAX = 100
FACTOR_MAX = 200
FACTOR_VALUE_MAX = 500
EXPLANATION_MAX = 20
CONFIDENCE_PLACES = 6
SUGGESTION_KEYS = {"verdict", "reason_code", "confidence", "model", "explanation"}
SUGGESTED_VERDICTS = (Verdict.APPROVE, Verdict.REJECT, Verdict.ESCALATE)


def _problem(field: str, message: str) -> InvalidSuggestion:
    return InvalidSuggestion(f"suggestion.{field}: {message}", field=f"suggestion.{field}")


def canonical_confidence(value: Any) -> str:
    """Return a confidence (a JSON number or a decimal string in [0, 1]) as its canonical text.

    Canonical: no exponent, no trailing zeros ("0.930" and "9.3E-1" are "0.93"), so two
    spellings of one confidence hash and compare alike. InvalidSuggestion otherwise.
    """
    number: Decimal | None
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, str)):
        number = None
    elif isinstance(value, str):
        number = number_from_text(value) if value == value.strip() else None
    else:
        number = Decimal(value)
    if number is None or not number.is_finite():
        raise _problem("confidence", "must be a decimal number from 0 to 1 (a number or a string)")
    if not Decimal(0) <= number <= Decimal(1):
        raise _problem("confidence", "must be between 0 and 1")
    try:
        exact = number.quantize(Decimal(1).scaleb(-CONFIDENCE_PLACES))
    except InvalidOperation:
        exact = None
    if exact is None or exact != number:
        raise _problem("confidence", f"must have at most {CONFIDENCE_PLACES} decimal places")
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "0") else text


def _text(value: Any, field: str, high: int, *, low: int = 1) -> str:
    if not isinstance(value, str):
        raise _problem(field, "must be a string")
    if "\x00" in value:
        raise _problem(field, "must not contain NUL characters")
    if not low <= len(value.strip() if low else value) or len(value) > high:
        raise _problem(field, f"must be between {low} and {high} characters long")
    return value


def _factor(entry: Any, index: int) -> dict[str, Any]:
    where = f"explanation.{index}"
    if not isinstance(entry, dict) or set(entry) != {"factor", "value"}:
        raise _problem(where, "must be an object with exactly `factor` and `value`")
    factor = _text(entry["factor"], f"{where}.factor", FACTOR_MAX)
    value = entry["value"]
    if isinstance(value, str):
        _text(value, f"{where}.value", FACTOR_VALUE_MAX, low=0)
    elif isinstance(value, bool):
        pass
    elif isinstance(value, (Decimal, int)):
        if not number_in_bounds(value):
            raise _problem(f"{where}.value", "must be a finite number of sane size")
    else:
        raise _problem(f"{where}.value", "must be a string, a number or true/false")
    return {"factor": factor, "value": value}


def clean_suggestion(*, queue: Queue, suggestion: Any) -> dict[str, Any] | None:
    """Return the suggestion as the item stores it, or raise InvalidSuggestion naming the field.

    The verdict must be one the queue's reviewers can pick (escalate only where the queue has
    somewhere to escalate to), the reason one of the queue's active codes for that verdict.
    """
    if suggestion is None:
        return None
    if not isinstance(suggestion, dict):
        raise InvalidSuggestion("suggestion: must be an object", field="suggestion")
    unknown = sorted(set(suggestion) - SUGGESTION_KEYS)
    if unknown:
        raise _problem(unknown[0], "is not a field of a suggestion")
    for key in ("verdict", "reason_code", "confidence", "model"):
        if key not in suggestion:
            raise _problem(key, "is required")
    verdict = suggestion["verdict"]
    if verdict not in SUGGESTED_VERDICTS:
        raise _problem("verdict", "must be approve, reject or escalate")
    if verdict == Verdict.ESCALATE and queue.escalation_queue_id is None:
        raise _problem("verdict", "this queue has no escalation queue to escalate to")
    code = _text(suggestion["reason_code"], "reason_code", 64)
    if not reason_codes_for(queue=queue, verdict=verdict).filter(code=code).exists():
        raise _problem("reason_code", f"is not an active reason code of this queue for {verdict}")
    model = suggestion["model"]
    if not isinstance(model, dict) or set(model) != {"name", "version"}:
        raise _problem("model", "must be an object with exactly `name` and `version`")
    cleaned: dict[str, Any] = {
        "verdict": str(verdict),
        "reason_code": code,
        "confidence": canonical_confidence(suggestion["confidence"]),
        "model": {
            "name": _text(model["name"], "model.name", MODEL_NAME_MAX),
            "version": _text(model["version"], "model.version", MODEL_VERSION_MAX),
        },
    }
    explanation = suggestion.get("explanation")
    if explanation is not None:
        if not isinstance(explanation, list):
            raise _problem("explanation", "must be a list of {factor, value} objects")
        if len(explanation) > EXPLANATION_MAX:
            raise _problem("explanation", f"must have at most {EXPLANATION_MAX} factors")
        cleaned["explanation"] = [_factor(entry, i) for i, entry in enumerate(explanation)]
    return cleaned


# -- what the reviewer saw ---------------------------------------------------------------------

_SALT = "queue_app.suggestion_seen"
_REVEALED = (SuggestionView.REVEALED_BEFORE_CHOICE, SuggestionView.REVEALED_AFTER_CHOICE)


@dataclass(frozen=True)
class Seen:
    """What a decision's maker saw of the suggestion: a SuggestionView and when (None: never)."""

    view: str
    shown_at: datetime | None


NOT_SHOWN = Seen(SuggestionView.NOT_SHOWN, None)


def seen_token(*, item_id: int, lease_token: uuid.UUID | str, seen: Seen) -> str:
    """Sign what the page showed, for its decision form to carry back."""
    return signing.dumps(
        {
            "item": item_id,
            "lease": str(lease_token),
            "view": seen.view,
            "at": seen.shown_at.isoformat() if seen.shown_at else None,
        },
        salt=_SALT,
        compress=True,
    )


def read_seen_token(*, token: str, item_id: int, lease_token: uuid.UUID | str) -> Seen:
    """What the posted seen-token says the page showed; an absent one: not shown.

    SuggestionSeenInvalid for a token this server did not sign, or signed for another item or
    lease: the page's record of what it showed cannot be trusted, so nothing is recorded.
    """
    if not token:
        return NOT_SHOWN
    try:
        data = signing.loads(token, salt=_SALT)
        valid = (
            data["item"] == item_id
            and data["lease"] == str(lease_token)
            and data["view"] in SuggestionView.values
            and data["view"] != SuggestionView.AUTOMATIC
        )
        shown_at = datetime.fromisoformat(data["at"]) if data["at"] else None
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise SuggestionSeenInvalid() from None
    if not valid or (shown_at is None) != (data["view"] == SuggestionView.NOT_SHOWN):
        raise SuggestionSeenInvalid()
    return Seen(data["view"], shown_at)


def seen_on_page(*, item: ReviewItem, blind: bool = False) -> Seen:
    """What a fresh item page shows of the item's suggestion under its queue's policy."""
    if item.suggestion is None or blind:
        return NOT_SHOWN
    if item.queue.suggestion_display == SuggestionDisplay.SHOWN:
        return Seen(SuggestionView.SHOWN, timezone.now())
    return NOT_SHOWN


@dataclass(frozen=True)
class Reveal:
    suggestion: dict[str, Any]
    seen: Seen
    token: str


def reveal_suggestion(
    *, item_id: int, reviewer: User, lease_token: uuid.UUID | str, chosen_verdict: str | None
) -> Reveal:
    """Show the holder of an item's lease its suggestion, and record that and when.

    chosen_verdict: the verdict the reviewer had chosen before asking (None: not yet). Fenced
    by the lease token like every write under a lease (StaleLease otherwise). Asking again
    under the same lease (a reload) records nothing new: the first reveal is what was seen.
    """
    token = parse_token(lease_token)
    if chosen_verdict is not None and chosen_verdict not in SUGGESTED_VERDICTS:
        chosen_verdict = None
    with transaction.atomic():
        item = (
            ReviewItem.objects.select_for_update(of=("self",))
            .select_related("queue")
            .filter(
                pk=item_id,
                state=ItemState.LEASED,
                lease_token=token,
                lease_owner_id=reviewer.pk,
            )
            .first()
        )
        if item is None:
            raise explain_stale_lease(item_id=item_id, user=reviewer)
        if item.suggestion is None or item.queue.suggestion_display != SuggestionDisplay.ON_REQUEST:
            raise InvalidSuggestion(
                "This item has no suggestion to reveal on request.", field="suggestion"
            )
        earlier = (
            ItemEvent.objects.filter(
                item_id=item.pk,
                kind=ItemEventKind.SUGGESTION_REVEALED,
                detail__lease_token=str(token),
            )
            .order_by("at", "pk")
            .first()
        )
        if earlier is not None:
            seen = Seen(
                SuggestionView.REVEALED_AFTER_CHOICE
                if earlier.detail.get("after_choice")
                else SuggestionView.REVEALED_BEFORE_CHOICE,
                earlier.at,
            )
        else:
            event = ItemEvent.objects.create(
                item=item,
                kind=ItemEventKind.SUGGESTION_REVEALED,
                actor=reviewer if reviewer.is_authenticated else None,
                detail={
                    "lease_token": str(token),
                    "after_choice": chosen_verdict is not None,
                    "chosen_verdict": chosen_verdict,
                },
            )
            seen = Seen(_REVEALED[chosen_verdict is not None], event.at)
    return Reveal(
        suggestion=item.suggestion,
        seen=seen,
        token=seen_token(item_id=item.pk, lease_token=token, seen=seen),
    )
