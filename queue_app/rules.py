"""Evidence rules: a queue's simple tests on payload fields that the item page shows as warnings.

A rule names a dotted path into the payload and one test: a date in the past, a value in a
list, a number below or above a threshold. Numbers are compared as exact Decimals (0.40 is
below 0.5, and 0.1 + 0.2 questions never arise). A value a test cannot judge (a missing field,
a number where a date was expected, a malformed date) simply does not match: a rule can never
break the page, only stay silent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from django.db import models
from django.utils import timezone

_MISSING = object()


class RuleTest(models.TextChoices):
    DATE_PAST = "date_past", "is a date in the past"
    IN_LIST = "in_list", "is one of (comma-separated)"
    BELOW = "below", "is a number below"
    ABOVE = "above", "is a number above"


class EvidenceRule(Protocol):
    """What the tests read of a rule (queue_app.models.EvidenceRule is one)."""

    path: str
    test: str
    value: str
    message: str


@dataclass(frozen=True)
class EvidenceWarning:
    """One rule that matched: where, the value it saw, and the rule's wording."""

    path: str
    value: Any
    message: str


def split_path(path: str) -> list[str]:
    """The segments of a dotted path ("document.expires" -> ["document", "expires"])."""
    return path.split(".")


def resolve(payload: Any, path: str) -> Any:
    """The value at a dotted path (list positions as numbers), or _MISSING."""
    current = payload
    for segment in split_path(path):
        if isinstance(current, dict) and segment in current:
            current = current[segment]
        elif isinstance(current, list) and segment.isdigit() and int(segment) < len(current):
            current = current[int(segment)]
        else:
            return _MISSING
    return current


def parse_number(value: Any) -> Decimal | None:
    """An exact Decimal for a JSON number (or a numeric string), None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
        return number if number.is_finite() else None
    return None


def list_items(value: str) -> list[str]:
    """The members of an in-list rule's value, trimmed, empty ones dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _is_past(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text) < timezone.localdate()
        moment = datetime.fromisoformat(text)
    except ValueError:
        return False
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment < timezone.now()


def matches(rule: EvidenceRule, value: Any) -> bool:
    """Whether the rule's test holds for the value (False for values it cannot judge)."""
    if value is _MISSING:
        return False
    if rule.test == RuleTest.DATE_PAST:
        return _is_past(value)
    if rule.test == RuleTest.IN_LIST:
        items = list_items(rule.value)
        if isinstance(value, str):
            return value in items
        number = parse_number(value)
        return number is not None and any(parse_number(item) == number for item in items)
    threshold = parse_number(rule.value)
    number = parse_number(value)
    if threshold is None or number is None:
        return False
    return number < threshold if rule.test == RuleTest.BELOW else number > threshold


def warnings_for(payload: Any, rules: Iterable[EvidenceRule]) -> list[EvidenceWarning]:
    """The warnings the rules raise on a payload, in the rules' order."""
    found = []
    for rule in rules:
        value = resolve(payload, rule.path)
        if matches(rule, value):
            found.append(EvidenceWarning(path=rule.path, value=value, message=rule.message))
    return found


def rule_errors(*, path: str, test: str, value: str) -> dict[str, str]:
    """What is wrong with a rule, by field (empty when it is valid)."""
    errors: dict[str, str] = {}
    if not path or path != path.strip() or not all(s.strip() for s in split_path(path)):
        errors["path"] = "Enter a dotted path such as document.expires (no empty parts)."
    if test == RuleTest.DATE_PAST:
        if value.strip():
            errors["value"] = "A date-in-the-past rule takes no value; leave it empty."
    elif test == RuleTest.IN_LIST:
        if not list_items(value):
            errors["value"] = "List at least one value, separated by commas (e.g. fail, review)."
    elif test in (RuleTest.BELOW, RuleTest.ABOVE):
        if parse_number(value) is None:
            errors["value"] = "Enter the threshold as an exact number, e.g. 0.5."
    else:
        errors["test"] = "Choose one of the tests offered."
    return errors
