"""A machine suggestion at intake: checked against the queue, stored, hashed, shown by the API."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from queue_app.errors import InvalidSuggestion
from queue_app.evidence import evidence_hash, item_evidence_hash
from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import create_item
from tests.api.conftest import intake_body
from tests.conftest import make_queue

pytestmark = pytest.mark.django_db


def good(**fields: Any) -> dict[str, Any]:
    """A valid suggestion for the kyc queue; fields override."""
    return {
        "verdict": "reject",
        "reason_code": "fraud",
        "confidence": Decimal("0.930"),
        "model": {"name": "fraud-score", "version": "2026.11"},
        "explanation": [
            {"factor": "ip_country_mismatch", "value": True},
            {"factor": "amount", "value": Decimal("1250.00")},
            {"factor": "merchant", "value": "ACME"},
        ],
        **fields,
    }


def test_a_good_suggestion_is_stored_hashed_and_shown(api, queue):
    reply = api.post("/items", intake_body(suggestion=good()))
    assert reply.status == 201, reply.body
    item = ReviewItem.objects.get()
    stored = {
        "verdict": "reject",
        "reason_code": "fraud",
        "confidence": "0.93",
        "model": {"name": "fraud-score", "version": "2026.11"},
        "explanation": [
            {"factor": "ip_country_mismatch", "value": True},
            {"factor": "amount", "value": Decimal("1250.00")},
            {"factor": "merchant", "value": "ACME"},
        ],
    }
    assert item.suggestion == stored
    assert reply.body["suggestion"] == stored
    assert api.get(f"/items/{item.pk}").body["suggestion"] == stored
    # The hash covers the suggestion: the same evidence without it hashes differently.
    with_it = evidence_hash(subject=item.subject, payload=item.payload, suggestion=stored)
    without = evidence_hash(subject=item.subject, payload=item.payload)
    assert item.evidence_hash == with_it == item_evidence_hash(item) == reply.body["evidence_hash"]
    assert with_it != without


def test_an_item_without_a_suggestion_hashes_as_before(api):
    reply = api.post("/items", intake_body())
    item = ReviewItem.objects.get()
    assert item.suggestion is None and reply.body["suggestion"] is None
    assert item.evidence_hash == evidence_hash(subject=item.subject, payload=item.payload)


@pytest.mark.parametrize(
    ("confidence", "stored"),
    [
        (Decimal("1"), "1"),
        (0, "0"),
        ("0.5000", "0.5"),
        ("9.3E-1", "0.93"),
        (Decimal("1E-6"), "0.000001"),
    ],
)
def test_confidence_is_stored_as_a_canonical_decimal_string(api, confidence, stored):
    reply = api.post("/items", intake_body(suggestion=good(confidence=confidence)))
    assert reply.status == 201, reply.body
    assert ReviewItem.objects.get().suggestion["confidence"] == stored


BAD = [
    ("verdict", {"verdict": "overturn"}),
    ("verdict", {"verdict": "maybe"}),
    ("reason_code", {"reason_code": "no_such_code"}),
    # A code of another verdict is not one for this verdict.
    ("reason_code", {"reason_code": "verified"}),
    ("confidence", {"confidence": Decimal("1.01")}),
    ("confidence", {"confidence": Decimal("-0.1")}),
    ("confidence", {"confidence": "high"}),
    ("confidence", {"confidence": True}),
    ("confidence", {"confidence": "0.1234567"}),
    ("model", {"model": "fraud-score"}),
    ("model", {"model": {"name": "fraud-score"}}),
    ("model.name", {"model": {"name": "", "version": "1"}}),
    ("model.version", {"model": {"name": "m", "version": "v" * 101}}),
    ("explanation", {"explanation": [{"factor": "f", "value": 1}] * 21}),
    ("explanation.0.value", {"explanation": [{"factor": "f", "value": {"nested": 1}}]}),
    ("explanation.0.factor", {"explanation": [{"factor": "", "value": 1}]}),
    ("explanation.0.extra", {"explanation": [{"factor": "f", "value": 1, "extra": 2}]}),
    ("surprise", {"surprise": 1}),
]


@pytest.mark.parametrize(("field", "change"), BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD)])
def test_a_bad_field_is_a_422_naming_it_and_nothing_is_written(api, field, change):
    reply = api.post("/items", intake_body(suggestion=good(**change)))
    assert reply.status == 422, reply.body
    fields = [d["field"] for d in reply.body["error"]["details"]]
    assert any(f == f"suggestion.{field}" or f.startswith(f"suggestion.{field}") for f in fields), (
        fields
    )
    assert ReviewItem.objects.count() == 0
    assert ItemEvent.objects.count() == 0


def test_a_missing_field_is_named(api):
    suggestion = good()
    del suggestion["confidence"]
    reply = api.post("/items", intake_body(suggestion=suggestion))
    assert reply.status == 422
    assert "suggestion.confidence" in [d["field"] for d in reply.body["error"]["details"]]
    assert ReviewItem.objects.count() == 0


def test_a_retired_reason_is_refused(api, queue):
    queue.reason_codes.filter(code="fraud").update(retired_at="2026-01-01T00:00:00Z")
    reply = api.post("/items", intake_body(suggestion=good()))
    assert reply.status == 422
    assert reply.body["error"]["code"] == "invalid_suggestion"
    assert reply.body["error"]["details"][0]["field"] == "suggestion.reason_code"
    assert ReviewItem.objects.count() == 0


def test_escalate_is_refused_in_a_queue_with_nowhere_to_escalate(reviewers_group):
    flat = make_queue("flat", group=reviewers_group)
    with pytest.raises(InvalidSuggestion) as refused:
        create_item(
            queue=flat,
            subject="s",
            payload={},
            idempotency_key="k",
            suggestion=good(verdict="escalate", reason_code="policy_gap"),
        )
    assert refused.value.field == "suggestion.verdict"
    assert ReviewItem.objects.count() == 0


def test_a_replay_answers_as_before_with_or_without_its_reason_still_active(api, queue):
    first = api.post("/items", intake_body(suggestion=good()))
    again = api.post("/items", intake_body(suggestion=good()))
    assert (first.status, again.status) == (201, 200)
    queue.reason_codes.filter(code="fraud").update(retired_at="2026-01-01T00:00:00Z")
    later = api.post("/items", intake_body(suggestion=good()))
    assert later.status == 200
    assert later.body["id"] == first.body["id"]
    assert ReviewItem.objects.count() == 1


def test_the_suggestion_is_in_the_openapi_schema(api):
    from django.test import Client

    schema = Client().get("/api/v1/openapi.json").json()
    components = schema["components"]["schemas"]
    assert "suggestion" in components["ItemIn"]["properties"]
    assert "suggestion" in components["ItemOut"]["properties"]
    assert {"suggestion_view", "suggestion_shown_at", "suggestion_followed"} <= set(
        components["DecisionOut"]["properties"]
    )
