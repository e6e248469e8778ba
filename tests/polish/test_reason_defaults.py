"""No reason is chosen for a reviewer unless the queue marked it as the verdict's safe default."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.urls import reverse

from queue_app.models import Decision, EvidenceRule, ReasonCode, ReviewItem
from queue_app.rules import warnings_for
from queue_app.services import claim_next
from tests.admin.conftest import client_for, compliance  # noqa: F401 (fixture)
from tests.conftest import make_items, shown_hash
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


def _reason(queue, code: str) -> ReasonCode:
    return ReasonCode.objects.get(queue=queue, code=code)


def test_a_queue_has_at_most_one_safe_default_per_verdict(queue):
    ReasonCode.objects.filter(pk=_reason(queue, "verified").pk).update(is_default=True)
    # Another verdict may have its own default.
    ReasonCode.objects.filter(pk=_reason(queue, "fraud").pk).update(is_default=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReasonCode.objects.filter(pk=_reason(queue, "within_tolerance").pk).update(is_default=True)


def test_the_admin_refuses_a_second_default_with_a_clear_error(compliance, queue):  # noqa: F811
    ReasonCode.objects.filter(pk=_reason(queue, "verified").pk).update(is_default=True)
    other = _reason(queue, "within_tolerance")
    response = client_for(compliance).post(
        reverse("admin:queue_app_reasoncode_change", args=[other.pk]),
        {"label": other.label, "is_default": "on"},
    )
    assert response.status_code == 200
    assert "already has a safe default reason for this verdict" in response.content.decode()
    other.refresh_from_db()
    assert other.is_default is False


def test_the_item_page_marks_only_the_safe_default_and_selects_nothing(alice, queue):
    ReasonCode.objects.filter(pk=_reason(queue, "verified").pk).update(is_default=True)
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    html = login(alice).get(f"/items/{item.pk}/").content.decode()
    assert re.findall(r'<option value="(\w+)"[^>]*data-default', html) == ["verified"]
    assert " selected" not in html.split('id="id_reason_code"')[1].split("</select>")[0]
    assert "Choose a reason" in html


def test_a_decision_without_a_reason_is_refused_and_nothing_is_written(alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    item.refresh_from_db()
    response = login(alice).post(
        f"/items/{item.pk}/decide/",
        {
            "lease_token": str(item.lease_token),
            "evidence_hash": shown_hash(item),
            "verdict": "reject",
            "reason_code": "",
        },
    )
    assert response.status_code == 400
    assert "Choose a reason for your verdict." in response.content.decode()
    assert not Decision.objects.exists()
    assert ReviewItem.objects.get(pk=item.pk).state == "leased"


def test_seed_demo_marks_only_safe_defaults_and_adds_the_warning_rules(monkeypatch):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=30)
    call_command("seed_demo", items=30)  # idempotent
    defaults = set(
        ReasonCode.objects.filter(is_default=True).values_list("queue__slug", "verdict", "code")
    )
    assert defaults == {("kyc", "approve", "identity_verified")}
    rules = EvidenceRule.objects.filter(queue__slug="kyc")
    assert set(rules.values_list("path", "test", "value")) == {
        ("document.expires", "date_past", ""),
        ("provider.document_authenticity", "in_list", "fail"),
        ("provider.liveness_score", "below", "0.5"),
    }
    # The demo data trips each of them somewhere.
    hit = {
        w.message
        for item in ReviewItem.objects.filter(queue__slug="kyc")
        for w in warnings_for(item.payload, rules)
    }
    assert hit == {
        "Document has expired",
        "Document authenticity failed",
        "Liveness score below 0.5",
    }
