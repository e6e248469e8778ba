"""Turn an item's payload into what the item page shows, per shape of evidence.

Amounts stay Decimal from the database to the screen: they are formatted with str-based
Decimal formatting, never through float, so 12345678901234.57 reaches the reviewer digit for
digit. Anything without a dedicated view falls back to a legible nested key/value rendering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from queue_app.jsonutil import exact_dumps, number_from_text, number_in_bounds
from queue_app.rules import EvidenceWarning

# The keys that make a payload a reconciliation exception (seed_demo and upstream feeds).
RECONCILIATION_KEYS = ("ledger_entity", "variance_amount", "match_decision")
# Amount-like fields shown in the reconciliation summary, in reading order.
RECONCILIATION_AMOUNTS = (
    ("variance_amount", "Variance"),
    ("ledger_amount", "Ledger amount"),
    ("bank_amount", "Bank amount"),
)
# Beyond this depth nested data is shown as one line of text rather than ever-deeper boxes.
MAX_DEPTH = 6


@dataclass(frozen=True)
class Amount:
    label: str
    value: str
    negative: bool
    zero: bool
    emphasis: bool = False
    warning: str = ""


@dataclass(frozen=True)
class ShownWarning:
    """A warning as the top of the evidence lists it: the field, its value, the rule's words."""

    path: str
    label: str
    value: SafeString
    message: str


@dataclass
class EvidenceView:
    """What the item page renders: an optional summary, and the full payload as key/value."""

    kind: str
    details: SafeString
    entity: str = ""
    match: str = ""
    currency: str = ""
    amounts: list[Amount] = field(default_factory=list)
    warnings: list[ShownWarning] = field(default_factory=list)


def as_decimal(value: Any) -> Decimal | None:
    """Return the value as an exact Decimal, or None if it is not a number the page can format.

    Numbers outside jsonutil's bounds (as intake enforces them, for numbers and numeric strings
    alike) are None too: a row written before those bounds, or around intake, is shown as the
    text it is rather than as a million digits, or a decimal.Overflow.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        # Should never happen (ExactDecoder), but if it does keep its shortest repr.
        value = Decimal(repr(value))
    if isinstance(value, str):
        value = number_from_text(value)
    if isinstance(value, Decimal | int) and number_in_bounds(value):
        return Decimal(value)
    return None


def format_amount(value: Any, *, signed: bool = False) -> str:
    """Format a number with thousands separators, keeping every digit it has."""
    number = as_decimal(value)
    if number is None:
        return str(value)
    # ",f" is Decimal's own formatting: exact, no exponent, trailing zeros kept ("0.10").
    # copy_abs, not abs(): abs() rounds to the context's 28 significant digits.
    text = format(number.copy_abs(), ",f")
    if number < 0:
        return "\u2212" + text  # a real minus sign reads better than a hyphen
    if signed and number > 0:
        return "+" + text
    return text


def humanize_key(key: Any) -> str:
    """Turn a payload key such as date_of_birth into a label such as Date of birth."""
    text = str(key).replace("_", " ").strip()
    return text[:1].upper() + text[1:] if text else str(key)


def _child(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _warned_row(path: str, warned: dict[str, list[str]], body: SafeString) -> SafeString:
    """A row of the nested view; a field a rule warns about carries the rule's words."""
    messages = warned.get(path)
    if not messages:
        return body
    return format_html(
        '{}<p class="ev-warning-text">{}</p>',
        body,
        format_html_join("", "<span>{}</span>", ((m,) for m in messages)),
    )


def render_value(
    value: Any, depth: int = 0, path: str = "", warned: dict[str, list[str]] | None = None
) -> SafeString:
    """Render any JSON value as escaped, nested HTML (definition lists and lists).

    warned maps a dotted path to the rule wordings that matched there: those rows are marked.
    """
    warned = warned or {}
    if value is None:
        return format_html('<span class="ev-empty">{}</span>', "none")
    if isinstance(value, bool):
        return format_html('<span class="ev-bool">{}</span>', "Yes" if value else "No")
    if isinstance(value, Decimal):
        return format_html('<span class="ev-number">{}</span>', format_amount(value))
    if isinstance(value, int | float):
        return format_html('<span class="ev-number">{}</span>', str(value))
    if isinstance(value, str):
        if value == "":
            return format_html('<span class="ev-empty">{}</span>', "empty")
        return format_html('<span class="ev-text">{}</span>', value)
    if depth >= MAX_DEPTH:
        return format_html('<code class="ev-text">{}</code>', exact_dumps(value))
    if isinstance(value, dict):
        if not value:
            return format_html('<span class="ev-empty">{}</span>', "none")
        rows = []
        # Alphabetical: jsonb hands keys back shortest-first, which reads as random.
        for k, v in sorted(value.items(), key=lambda kv: str(kv[0])):
            child = _child(path, k)
            inner = _warned_row(child, warned, render_value(v, depth + 1, child, warned))
            rows.append(
                format_html(
                    '<div class="ev-row{}" data-path="{}"><dt title="{}">{}</dt><dd>{}</dd></div>',
                    " ev-warning" if child in warned else "",
                    child,
                    str(k),
                    humanize_key(k),
                    inner,
                )
            )
        return format_html(
            '<dl class="ev-dict">{}</dl>', format_html_join("", "{}", ((r,) for r in rows))
        )
    if isinstance(value, list | tuple):
        if not value:
            return format_html('<span class="ev-empty">{}</span>', "none")
        items = []
        for i, v in enumerate(value):
            child = _child(path, i)
            inner = _warned_row(child, warned, render_value(v, depth + 1, child, warned))
            # Plain <li> unless a rule flags it (list positions are rarely rule targets).
            attrs = (
                format_html(' class="ev-warning" data-path="{}"', child) if child in warned else ""
            )
            items.append(format_html("<li{}>{}</li>", attrs, inner))
        return format_html(
            '<ol class="ev-list">{}</ol>', format_html_join("", "{}", ((i,) for i in items))
        )
    return format_html('<span class="ev-text">{}</span>', str(value))


def is_reconciliation(payload: Any) -> bool:
    """Return whether the payload has the shape of a reconciliation exception."""
    return isinstance(payload, dict) and all(key in payload for key in RECONCILIATION_KEYS)


def _label(path: str) -> str:
    return " \u203a ".join(humanize_key(part) for part in path.split("."))


def evidence_view(payload: Any, warnings: list[EvidenceWarning] | None = None) -> EvidenceView:
    """Return the rendering of a payload: a reconciliation summary, or the generic view.

    warnings (from queue_app.rules) are listed at the top and mark the fields they concern.
    """
    warnings = warnings or []
    warned: dict[str, list[str]] = {}
    for warning in warnings:
        warned.setdefault(warning.path, []).append(warning.message)
    shown = [
        ShownWarning(
            path=w.path, label=_label(w.path), value=render_value(w.value), message=w.message
        )
        for w in warnings
    ]
    if not is_reconciliation(payload):
        return EvidenceView(
            kind="generic", details=render_value(payload, warned=warned), warnings=shown
        )
    amounts = []
    for key, label in RECONCILIATION_AMOUNTS:
        if key not in payload:
            continue
        number = as_decimal(payload[key])
        variance = key == "variance_amount"
        amounts.append(
            Amount(
                label=label,
                value=format_amount(payload[key], signed=variance),
                negative=bool(number is not None and number < 0),
                zero=bool(number is not None and number == 0),
                emphasis=variance,
                warning=" ".join(warned.get(key, [])),
            )
        )
    rest = {k: v for k, v in payload.items() if k not in {k for k, _ in RECONCILIATION_AMOUNTS}}
    for key in ("ledger_entity", "match_decision", "currency"):
        rest.pop(key, None)
    return EvidenceView(
        kind="reconciliation",
        entity=str(payload["ledger_entity"]),
        match=str(payload["match_decision"]),
        currency=str(payload.get("currency", "")),
        amounts=amounts,
        details=render_value(rest, warned=warned),
        warnings=shown,
    )
