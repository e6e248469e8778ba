"""Evidence rules: exact comparisons, silence on what cannot be compared, clear admin errors."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from queue_app.console.evidence_display import evidence_view
from queue_app.models import EvidenceRule, Queue, RuleTest
from queue_app.rules import rule_errors, warnings_for
from queue_app.services import claim_next, create_item
from tests.admin.conftest import client_for, compliance  # noqa: F401 (fixture)
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


def rule(path: str, test: str, value: str = "", message: str = "warn") -> EvidenceRule:
    return EvidenceRule(path=path, test=test, value=value, message=message)


PAYLOAD = {
    "document": {"expires": "2024-10-31", "issued": "2020-01-01T09:00:00+00:00"},
    "provider": {
        "liveness_score": Decimal("0.40"),
        "document_authenticity": "fail",
        "face_match": "n/a",
        "flags": [None, {"score": 3}],
    },
    "amount": "0.5",
    "count": 7,
    "ok": True,
}


@pytest.mark.parametrize(
    ("path", "test", "value", "matched"),
    [
        ("document.expires", RuleTest.DATE_PAST, "", True),
        ("document.issued", RuleTest.DATE_PAST, "", True),
        ("provider.document_authenticity", RuleTest.IN_LIST, "fail, review", True),
        ("provider.document_authenticity", RuleTest.IN_LIST, "Fail", False),  # exact
        ("provider.liveness_score", RuleTest.BELOW, "0.5", True),
        ("provider.liveness_score", RuleTest.BELOW, "0.40", False),  # 0.40 is not below 0.40
        ("provider.liveness_score", RuleTest.ABOVE, "0.39999999999999999999", True),
        ("amount", RuleTest.BELOW, "0.50", False),  # "0.5" == 0.50, exactly
        ("count", RuleTest.ABOVE, "6.999", True),
        ("count", RuleTest.IN_LIST, "7, 8", True),
        ("provider.flags.1.score", RuleTest.ABOVE, "2", True),
        # Cannot be compared: no match, and no error.
        ("provider.face_match", RuleTest.BELOW, "0.5", False),
        ("provider.liveness_score", RuleTest.DATE_PAST, "", False),
        ("ok", RuleTest.ABOVE, "0", False),
        ("provider.flags.0.score", RuleTest.ABOVE, "0", False),
        ("provider.flags.9", RuleTest.IN_LIST, "x", False),
        ("provider.document_authenticity", RuleTest.DATE_PAST, "", False),
        ("missing.path", RuleTest.IN_LIST, "x", False),
        ("document", RuleTest.IN_LIST, "x", False),
    ],
)
def test_rules_compare_exactly_and_stay_silent_on_what_they_cannot_compare(
    path, test, value, matched
):
    assert bool(warnings_for(PAYLOAD, [rule(path, test, value)])) is matched


def test_a_future_date_is_not_a_warning():
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    assert warnings_for({"d": tomorrow}, [rule("d", RuleTest.DATE_PAST)]) == []


def test_the_evidence_lists_warnings_first_and_marks_the_field():
    view = evidence_view(
        PAYLOAD,
        warnings_for(
            PAYLOAD,
            [rule("provider.liveness_score", RuleTest.BELOW, "0.5", "Liveness below 0.5")],
        ),
    )
    [shown] = view.warnings
    assert (shown.path, shown.message, shown.label) == (
        "provider.liveness_score",
        "Liveness below 0.5",
        "Provider \u203a Liveness score",
    )
    assert '<span class="ev-number">0.40</span>' in shown.value
    assert '<div class="ev-row ev-warning" data-path="provider.liveness_score">' in view.details
    assert '<p class="ev-warning-text"><span>Liveness below 0.5</span></p>' in view.details


def test_a_reconciliation_amount_can_carry_a_warning():
    payload = {
        "ledger_entity": "ACME",
        "variance_amount": Decimal("-250.00"),
        "match_decision": "UNMATCHED",
    }
    view = evidence_view(
        payload,
        warnings_for(payload, [rule("variance_amount", RuleTest.BELOW, "0", "Negative variance")]),
    )
    assert view.amounts[0].warning == "Negative variance"


@pytest.mark.parametrize(
    ("path", "test", "value", "field", "words"),
    [
        ("", RuleTest.BELOW, "1", "path", "dotted path"),
        ("a..b", RuleTest.BELOW, "1", "path", "no empty parts"),
        ("a", RuleTest.BELOW, "half", "value", "exact number"),
        ("a", RuleTest.ABOVE, "NaN", "value", "exact number"),
        ("a", RuleTest.IN_LIST, " , ", "value", "at least one value"),
        ("a", RuleTest.DATE_PAST, "2024-01-01", "value", "takes no value"),
        ("a", "sounds_bad", "", "test", "Choose one of the tests"),
    ],
)
def test_a_bad_rule_gets_a_clear_error(path, test, value, field, words):
    errors = rule_errors(path=path, test=test, value=value)
    assert words in errors[field]
    with pytest.raises(ValidationError):
        rule(path, test, value).clean()


def test_the_database_refuses_an_unknown_test(queue):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        EvidenceRule.objects.create(queue=queue, path="a", test="sounds_bad", message="x")


def _queue_post(queue: Queue, rules: list[dict[str, str]]) -> dict[str, str]:
    data = {
        "slug": queue.slug,
        "name": queue.name,
        "description": "",
        "lease_ttl": "00:05:00",
        "max_in_flight": "1000",
        "release_skip": "00:15:00",
        "escalation_threshold": "3",
        "escalation_queue": queue.escalation_queue_id or "",
        "effect": "log",
        "webhook_url": "",
        "webhook_secret_env": "",
        "evidence_rules-TOTAL_FORMS": str(len(rules)),
        "evidence_rules-INITIAL_FORMS": "0",
        # The queue form's other parts: deadlines and holds, second-person controls (none).
        "default_sla": "",
        "sla_warning": "04:00:00",
        "max_hold": "7 00:00:00",
        "hold_reasons-TOTAL_FORMS": "0",
        "hold_reasons-INITIAL_FORMS": "0",
        "qa_rate": "0",
        "check_policies-TOTAL_FORMS": "0",
        "check_policies-INITIAL_FORMS": "0",
    }
    for i, fields in enumerate(rules):
        for key, value in fields.items():
            data[f"evidence_rules-{i}-{key}"] = value
    return data


def test_the_queue_admin_saves_valid_rules_inline(compliance, queue):  # noqa: F811
    url = reverse("admin:queue_app_queue_change", args=[queue.pk])
    response = client_for(compliance).post(
        url,
        _queue_post(
            queue,
            [
                {
                    "path": "provider.liveness_score",
                    "test": "below",
                    "value": "0.5",
                    "message": "Liveness below 0.5",
                },
            ],
        ),
    )
    assert response.status_code == 302
    assert list(queue.evidence_rules.values_list("path", "test", "value")) == [
        ("provider.liveness_score", "below", "0.5")
    ]


def test_the_queue_admin_refuses_a_bad_rule_with_a_clear_error(compliance, queue):  # noqa: F811
    url = reverse("admin:queue_app_queue_change", args=[queue.pk])
    response = client_for(compliance).post(
        url,
        _queue_post(
            queue,
            [
                {
                    "path": "provider.liveness_score",
                    "test": "below",
                    "value": "half",
                    "message": "Liveness below half",
                }
            ],
        ),
    )
    assert response.status_code == 200
    assert "Enter the threshold as an exact number, e.g. 0.5." in response.content.decode()
    assert not EvidenceRule.objects.exists()


def test_the_item_page_shows_warnings_and_never_fails_on_odd_values(alice, queue):
    EvidenceRule.objects.create(
        queue=queue, path="score", test="below", value="0.5", message="Score below 0.5"
    )
    EvidenceRule.objects.create(queue=queue, path="when", test="date_past", message="In the past")
    create_item(
        queue=queue,
        subject="odd",
        payload={"score": [1, 2], "when": {"nested": True}},
        idempotency_key="odd",
    )
    create_item(queue=queue, subject="low", payload={"score": "0.2"}, idempotency_key="low")
    client = login(alice)
    first = claim_next(queue=queue, reviewer=alice)
    page = client.get(f"/items/{first.pk}/")
    assert page.status_code == 200
    assert "evidence-warnings" not in page.content.decode()
    low = queue.items.get(subject="low")
    html = client.get(f"/items/{low.pk}/").content.decode()
    assert "Score below 0.5" in html
