"""seed_demo shows deadlines, hold reasons, and customers with items in both queues."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db.models import Count

from queue_app.models import HoldReason, Queue, ReviewItem

pytestmark = pytest.mark.django_db


def test_the_demo_has_deadlines_hold_reasons_and_shared_subjects(monkeypatch, capsys):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=30)
    reasons = HoldReason.objects.count()
    call_command("seed_demo", items=30)
    assert HoldReason.objects.count() == reasons
    assert set(HoldReason.objects.values_list("queue__slug", flat=True)) == {
        "kyc",
        "reconciliation",
        "escalation",
    }
    assert Queue.objects.get(slug="kyc").default_sla is not None
    items = ReviewItem.objects.filter(queue__slug__in=["kyc", "reconciliation"])
    assert not items.filter(subject_key__isnull=True).exists()
    assert not items.filter(due_at__isnull=True).exists()
    # some customers have items in both queues, so an item page shows history across them
    across = (
        items.values("subject_key").annotate(queues=Count("queue", distinct=True)).filter(queues=2)
    )
    assert across.exists()
