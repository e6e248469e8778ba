"""Measure (not test) the admin lists at 150k items and decisions; prints timings.

Not collected by the suite (no test_ prefix). Run it on purpose:
    .venv/bin/python -m pytest tests/admin/measure_changelist.py -s -p no:logging
"""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.urls import reverse

from queue_app.models import ReasonCode, ReviewItem
from tests.admin.conftest import client_for
from tests.admin.test_export_memory import INSERT_DECISIONS, INSERT_ITEMS

pytestmark = pytest.mark.django_db

ROWS = 150_000


def test_measure_admin_lists(queue, alice, compliance, capsys):
    reason = ReasonCode.objects.get(queue=queue, verdict="approve", code="verified")
    with connection.cursor() as cursor:
        cursor.execute(INSERT_ITEMS, {"queue_id": queue.pk, "total": ROWS})
        cursor.execute(INSERT_DECISIONS, {"reviewer_id": alice.pk, "reason_id": reason.pk})
        cursor.execute("ANALYZE")
    client = client_for(compliance)
    items = reverse("admin:queue_app_reviewitem_changelist")
    decisions = reverse("admin:queue_app_decision_changelist")
    last_item = ReviewItem.objects.order_by("-id").values_list("id", flat=True).first()
    cases = [
        ("items: unfiltered", items, {}),
        ("items: state=decided", items, {"state__exact": "decided"}),
        ("items: leased once", items, {"leases": "1"}),
        ("items: older than 7 days", items, {"age": "old"}),
        ("items: search subject", items, {"q": "Applicant 12345"}),
        ("items: search idempotency key", items, {"q": "bulk-777"}),
        ("items: page 1000", items, {"p": "1000"}),
        (
            "item page with timeline",
            reverse("admin:queue_app_reviewitem_change", args=[last_item]),
            {},
        ),
        ("decisions: unfiltered", decisions, {}),
        ("decisions: verdict=approve", decisions, {"verdict__exact": "approve"}),
    ]
    client.get(items)  # warm up
    with capsys.disabled():
        print(f"\n{ROWS:,} items and decisions; 5 requests each")
        for name, url, params in cases:
            times = []
            for _ in range(5):
                start = time.perf_counter()
                assert client.get(url, params).status_code == 200
                times.append(time.perf_counter() - start)
            times.sort()
            print(f"{name:34s} median {times[2] * 1000:7.1f} ms  (min {times[0] * 1000:.1f})")
