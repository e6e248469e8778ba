"""/ops/ says one thing one way: its panels add up, and the in-flight limit has one name."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from queue_app.models import Queue
from queue_app.ops.doctor_checks import run_checks
from queue_app.services import claim_batch, overturn_decision
from tests.conftest import make_items, make_queue
from tests.ops.conftest import decide_after
from tests.ops.test_dashboard import summary_cell

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
# Where /ops/ is documented for the people who read it.
OPERATOR_GUIDE = REPO / "docs" / "operator-guide.md"
# The one name, as a person reads it (the field is max_in_flight).
NAME = "max in flight"


def _panel(html: str, slug: str) -> str:
    return re.search(rf'<section class="ops-queue" id="queue-{slug}".*?</section>', html, re.S)[0]


def test_the_reason_panel_adds_up_to_the_decision_count(client, operator, queue, alice):
    items = make_items(queue, 3)
    approved = decide_after(items[0], alice, seconds=10, verdict="approve", reason="verified")
    decide_after(items[1], alice, seconds=10, verdict="reject", reason="fraud")
    decide_after(items[2], alice, seconds=10, verdict="reject", reason="document_expired")
    overturn_decision(
        decision_id=approved.pk,
        admin=User.objects.create_superuser("root", password="pw-root"),
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    client.force_login(operator)

    html = client.get(reverse("ops:dashboard")).content.decode()
    panel = _panel(html, "kyc")

    counted = [int(n) for n in re.findall(r'<td class="num" data-count>(\d+)</td>', panel)]
    assert summary_cell(html, "kyc", "decisions") == "3"
    assert sum(counted) == 3
    assert 'data-verdict="overturn"' not in panel
    # Both say what they count, and the overturn is shown apart, not lost.
    assert "overturns not counted" in html
    assert re.search(r'data-figure="overturns">1<', panel)


def test_the_in_flight_limit_has_one_name_everywhere(client, operator, reviewers_group, alice):
    small = make_queue("small", group=reviewers_group, max_in_flight=10)
    make_items(small, 10)
    claim_batch(queue=small, worker=alice, n=9, ttl=timedelta(minutes=5))
    client.force_login(operator)

    pages = {
        "/ops/": client.get(reverse("ops:dashboard")).content.decode(),
        "/metrics": client.get("/metrics").content.decode(),
        "doctor": next(r.summary for r in run_checks() if r.name == "LEASE_LEAK"),
        "operator guide": OPERATOR_GUIDE.read_text(),
    }
    for where, text in pages.items():
        assert "ceiling" not in text.lower(), where
        assert NAME in text.lower(), where
    # Nor does any other guide a person reads to use it.
    guides = ["README.md", "docs/reviewer-guide.md", "docs/deployment.md", "docs/api.md"]
    for document in guides:
        assert "ceiling" not in (REPO / document).read_text().lower(), document
    # The admin's label and help text, under it.
    field = Queue._meta.get_field("max_in_flight")
    assert field.verbose_name == NAME
    assert "ceiling" not in field.help_text.lower()
