"""seed_demo attaches a specimen ID card to the first KYC items, once, however often it runs."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from queue_app.models import ItemEvent, ItemEventKind, ReviewItem

pytestmark = pytest.mark.django_db


def test_demo_kyc_items_carry_an_id_card_once(monkeypatch):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=5, stdout=io.StringIO())
    out = io.StringIO()
    call_command("seed_demo", items=5, stdout=out)
    assert "0 new attachments" in out.getvalue()
    with_card = ReviewItem.objects.filter(attachments__has_key="id-front.png")
    assert sorted(with_card.values_list("idempotency_key", flat=True)) == [
        "demo-kyc-0",
        "demo-kyc-1",
        "demo-kyc-2",
    ]
    assert ItemEvent.objects.filter(kind=ItemEventKind.ATTACHMENT_PUT).count() == 3
    assert {i.attachments["id-front.png"]["content_type"] for i in with_card} == {"image/png"}
