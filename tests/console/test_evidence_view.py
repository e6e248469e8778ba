"""Evidence formatting: exact amounts, legible nesting, everything escaped."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from queue_app.console.evidence_display import evidence_view, format_amount, render_value
from queue_app.models import ReviewItem
from tests.console.conftest import recon_item
from tests.console.test_item_page import hidden


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


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # Out of bounds (as intake refuses them): shown as the text they are.
        ("1e1000000", "1e1000000"),  # abs() of it raised decimal.Overflow
        ("1e999999", "1e999999"),  # 1.3 million characters once formatted
        (Decimal("1E+100000"), "1E+100000"),
        (Decimal("1E-1001"), "1E-1001"),
        # Decimal() reads these, but they are not plain numbers: shown as sent.
        ("1_000", "1_000"),
        ("\u0661\u0662", "\u0661\u0662"),
        # More than the context's 28 significant digits, every one kept (abs() rounded them).
        (
            Decimal("-12345678901234567890123456789012.5"),
            "\u221212,345,678,901,234,567,890,123,456,789,012.5",
        ),
    ],
)
def test_it_shows_numbers_it_cannot_format_as_text(value, expected):
    assert format_amount(value, signed=True) == expected


# -- the item page renders any stored payload ----------------------------------------------------

POISON = {
    "a numeric string past the bounds": "'\"1e1000000\"'",
    "a numeric string a million digits long once formatted": "'\"1e999999\"'",
    "a number past the bounds": "'1e100000'",
    "an integer too long for int()": "('1' || repeat('0', 5000))",
}


def _store_behind_intake(item_id: int, variance_sql: str) -> None:
    """Write the variance straight into the row, as an old row or a direct SQL write would."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET payload = jsonb_set(payload, '{variance_amount}', "
            f"{variance_sql}::jsonb) WHERE id = %s",
            [item_id],
        )


@pytest.mark.django_db
@pytest.mark.parametrize("variance_sql", POISON.values(), ids=POISON.keys())
def test_the_item_page_renders_a_poison_amount_as_text(
    alice_client, alice, recon_queue, variance_sql
):
    item = recon_item(recon_queue)
    _store_behind_intake(item.pk, variance_sql)
    response = alice_client.post(f"/queues/{recon_queue.slug}/next/", follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="decision-form"' in html
    assert "ACME-CORP" in html
    # Shown as stored (PostgreSQL writes 1e100000 out in full), never expanded further.
    stored = ReviewItem.objects.get(pk=item.pk).payload["variance_amount"]
    assert f'<span class="amount">{stored}</span>' in html
    assert len(html) < len(str(stored)) + 20_000


@pytest.mark.django_db
def test_a_payload_nested_too_deep_to_decode_is_shown_as_text_and_can_be_decided(
    alice_client, alice, recon_queue
):
    item = recon_item(recon_queue)
    depth = 3000  # jsonb takes it; Python's recursive parser does not
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET payload = (%s || '1' || %s)::jsonb WHERE id = %s",
            ['{"a": ' + "[" * depth, "]" * depth + "}", item.pk],
        )
    # Written below the services, so its stored hash was cleared: stored again as an operator
    # does for such rows (the decide refuses an item without one as changed evidence).
    call_command("backfill_evidence_hashes", stdout=StringIO())
    # Before: every read of the row raised RecursionError, so Next failed for the whole queue.
    response = alice_client.post(f"/queues/{recon_queue.slug}/next/", follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert "[[[[[1]]]]]" in html
    shown = hidden(html, "evidence_hash")
    token = hidden(html, "lease_token")
    decided = alice_client.post(
        f"/items/{item.pk}/decide/",
        {
            "lease_token": token,
            "evidence_hash": shown,
            "verdict": "reject",
            "reason_code": "fraud",
            "note": "",
        },
    )
    assert decided.status_code == 302
    assert ReviewItem.objects.get(pk=item.pk).state == "decided"


@pytest.mark.django_db
def test_a_page_that_fails_offers_its_holder_the_way_out(
    alice_client, alice, recon_queue, monkeypatch
):
    item = recon_item(recon_queue)
    alice_client.post(f"/queues/{recon_queue.slug}/next/")
    token = ReviewItem.objects.get(pk=item.pk).lease_token

    def broken(payload):
        raise ValueError("a rendering bug nobody foresaw")

    monkeypatch.setattr("queue_app.console.views.evidence_view", broken)
    page = alice_client.get(f"/items/{item.pk}/")
    assert page.status_code == 500
    html = page.content.decode()
    assert "could not be shown" in html and "Traceback" not in html
    assert hidden(html, "lease_token") == str(token)
    assert f'action="/items/{item.pk}/release/"' in html

    released = alice_client.post(f"/items/{item.pk}/release/", {"lease_token": str(token)})
    assert released.status_code == 302
    assert ReviewItem.objects.get(pk=item.pk).state == "pending"


@pytest.mark.django_db
def test_a_failed_page_offers_no_release_to_someone_not_holding_it(
    alice_client, bob_client, alice, recon_queue, monkeypatch
):
    item = recon_item(recon_queue)
    alice_client.post(f"/queues/{recon_queue.slug}/next/")
    monkeypatch.setattr("queue_app.console.views.evidence_view", lambda payload: 1 / 0)
    page = bob_client.get(f"/items/{item.pk}/")
    assert page.status_code == 500
    assert b"release-form" not in page.content
    assert str(ReviewItem.objects.get(pk=item.pk).lease_token).encode() not in page.content
