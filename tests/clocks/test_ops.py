"""Deadlines and holds on /ops/, /metrics and doctor."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from queue_app.ops.doctor_checks import run_checks
from queue_app.services import claim_next, hold_item
from tests.clocks.helpers import add_hold_reasons, item
from tests.ops.conftest import decide_after, operator  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(queue, alice, bob):
    """kyc: one breached, one at risk, one far off, one on hold; two decided (one late)."""
    now = timezone.now()
    add_hold_reasons(queue)
    item(queue, "breached", due_at=now - timedelta(minutes=30))
    item(queue, "at_risk", due_at=now + timedelta(hours=1))
    item(queue, "far", due_at=now + timedelta(days=3))
    held = item(queue, "held", due_at=now + timedelta(days=5), priority=100)
    lease = claim_next(queue=queue, reviewer=alice)
    assert lease.pk == held.pk
    hold_item(
        item_id=held.pk,
        reviewer=alice,
        lease_token=lease.lease_token,
        reason_code="awaiting_documents",
        hold_until=now + timedelta(days=1),
    )
    late = item(queue, "late", due_at=now - timedelta(hours=2), priority=-5)
    early = item(queue, "early", due_at=now + timedelta(hours=10), priority=-5)
    decide_after(late, bob, seconds=60)
    decide_after(early, bob, seconds=60)
    return queue


def test_ops_shows_breached_at_risk_late_decisions_and_holds(world, operator):  # noqa: F811
    client = Client()
    client.force_login(operator)
    html = client.get("/ops/").content.decode()
    row = html[html.index('id="sla-kyc"') :]
    row = row[: row.index("</tr>")]
    assert 'data-figure="breached">1<' in row
    assert 'data-figure="at-risk">1<' in row
    assert 'data-figure="decided-late">1 <span class="ago">of 2</span>' in row
    assert 'data-figure="on-hold">1<' in row
    # p50 between -2 h (late) and +10 h: 4 h left, less the minute each took to decide
    assert "3 h 59 min left</span>" in row or "4 h left</span>" in row


def test_metrics_has_the_deadline_gauges(world):
    text = Client().get("/metrics").content.decode()
    samples = {
        (s.name, s.labels.get("queue"), s.labels.get("quantile")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("reviewconsole_items_breached", "kyc", None)] == 1
    assert samples[("reviewconsole_items_at_risk", "kyc", None)] == 1
    assert samples[("reviewconsole_items_on_hold", "kyc", None)] == 1
    assert samples[("reviewconsole_decisions_after_deadline_window", "kyc", None)] == 1
    p50 = samples[("reviewconsole_time_to_deadline_at_decision_seconds", "kyc", "0.5")]
    p90 = samples[("reviewconsole_time_to_deadline_at_decision_seconds", "kyc", "0.9")]
    assert p50 < p90 and p90 > 0
    assert samples[("reviewconsole_items_breached", "escalation", None)] == 0


def test_doctor_names_the_breach_and_passes_without_one(world):
    result = {r.name: r for r in run_checks()}["SLA_BREACH"]
    assert not result.ok and "kyc (1)" in result.summary and result.advice
    world.items.filter(idempotency_key="breached").update(due_at=timezone.now() + timedelta(days=1))
    assert {r.name: r for r in run_checks()}["SLA_BREACH"].ok
