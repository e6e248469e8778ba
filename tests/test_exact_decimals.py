"""Exact decimals from intake to decision; the canonical evidence hash."""

from __future__ import annotations

from decimal import Decimal

import pytest

from queue_app.evidence import canonical_evidence, evidence_hash
from queue_app.jsonutil import exact_dumps, exact_loads
from queue_app.models import ReviewItem
from queue_app.services import claim_next, create_item, submit_decision

AMOUNTS = ["12345678901234.57", "0.10", "-0.01", "99999999999999999999.999999", "1000.000"]


@pytest.mark.django_db
def test_amounts_survive_storage_and_decision(queue, alice):
    payload = {
        "variance_amount": Decimal("12345678901234.57"),
        "fee": Decimal("0.10"),
        "lines": [{"amount": Decimal(a)} for a in AMOUNTS],
    }
    item, _ = create_item(queue=queue, subject="ACME", payload=payload, idempotency_key="k1")
    stored = ReviewItem.objects.get(pk=item.pk).payload
    assert stored["variance_amount"] == Decimal("12345678901234.57")
    assert str(stored["fee"]) == "0.10"
    assert [str(line["amount"]) for line in stored["lines"]] == AMOUNTS
    leased = claim_next(queue=queue, reviewer=alice)
    assert str(leased.payload["fee"]) == "0.10"
    shown = evidence_hash(subject=leased.subject, payload=leased.payload)
    assert shown == evidence_hash(subject="ACME", payload=payload)
    decision = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=leased.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown,
    )
    assert decision.evidence_hash == shown


def test_exact_json_round_trips_digit_for_digit():
    text = '{"a":12345678901234.57,"b":0.10,"c":[1,2.50],"d":"x"}'
    value = exact_loads(text)
    assert value["b"] == Decimal("0.10") and str(value["b"]) == "0.10"
    assert exact_dumps(value) == text


def test_canonical_evidence_sorts_keys_and_writes_decimals_as_strings():
    a = canonical_evidence(
        subject="s", payload={"b": Decimal("0.10"), "a": [1, {"z": 1, "y": "é"}]}
    )
    assert a == '{"payload":{"a":[1,{"y":"é","z":1}],"b":"0.10"},"subject":"s"}'
    assert evidence_hash(subject="s", payload={"a": 1, "b": 2}) == evidence_hash(
        subject="s", payload={"b": 2, "a": 1}
    )
    assert evidence_hash(subject="s", payload={"a": Decimal("0.1")}) != evidence_hash(
        subject="s", payload={"a": Decimal("0.10")}
    )


def test_non_finite_numbers_are_refused():
    with pytest.raises(ValueError):
        exact_dumps({"a": Decimal("NaN")})
    with pytest.raises(ValueError):
        exact_dumps({"a": float("inf")})
