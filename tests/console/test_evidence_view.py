"""Evidence formatting: exact amounts, legible nesting, everything escaped."""

from __future__ import annotations

from decimal import Decimal

import pytest

from queue_app.console.evidence import evidence_view, format_amount, render_value


@pytest.mark.parametrize(
    ("value", "signed", "expected"),
    [
        (Decimal("12345678901234.57"), False, "12,345,678,901,234.57"),
        (Decimal("12345678901234.57"), True, "+12,345,678,901,234.57"),
        (Decimal("-1000.5"), False, "\u22121,000.5"),
        (Decimal("0.10"), False, "0.10"),
        (Decimal("0"), True, "0"),
        (Decimal("1E+3"), False, "1,000"),
        ("9999999999999999.99", False, "9,999,999,999,999,999.99"),
        (1234567, False, "1,234,567"),
        ("n/a", False, "n/a"),
    ],
)
def test_it_formats_amounts_exactly(value, signed, expected):
    assert format_amount(value, signed=signed) == expected


def test_a_reconciliation_payload_gets_its_summary():
    view = evidence_view(
        {
            "ledger_entity": "ACME",
            "variance_amount": Decimal("-0.01"),
            "match_decision": "UNMATCHED",
            "currency": "GBP",
            "bank_reference": "BR1",
        }
    )
    assert view.kind == "reconciliation"
    assert (view.entity, view.match, view.currency) == ("ACME", "UNMATCHED", "GBP")
    (variance,) = view.amounts
    assert (variance.value, variance.negative, variance.emphasis) == ("\u22120.01", True, True)
    assert "Bank reference" in view.details
    assert "ledger_entity" not in view.details  # shown once, in the summary


def test_other_shapes_fall_back_to_key_values():
    assert evidence_view({"name": "x"}).kind == "generic"
    assert evidence_view(["a", "b"]).kind == "generic"
    assert evidence_view("plain text").details == '<span class="ev-text">plain text</span>'


def test_deep_nesting_stops_at_a_readable_depth():
    deep: dict = {"leaf": Decimal("1.50")}
    for _ in range(10):
        deep = {"level": deep}
    html = render_value(deep)
    assert html.count("<dl") == 6
    assert "{&quot;level&quot;:" in html
    assert "1.50" in html


def test_keys_and_values_are_escaped():
    html = render_value({"<k>": ["<v>", {"a&b": None}]})
    assert "<k>" not in html and "&lt;k&gt;" in html
    assert "&lt;v&gt;" in html
    assert "a&amp;b" in html
