"""/metrics: Prometheus text that the reference parser reads, with the database's figures."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from queue_app.services import claim_next, overturn_decision
from tests.conftest import make_items, make_queue
from tests.ops.conftest import (
    age_item,
    backdate_decision,
    backdate_outcome,
    decide_after,
    mark_dead,
)

pytestmark = pytest.mark.django_db


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples, name: str, **labels) -> float:
    return samples[(f"reviewconsole_{name}", tuple(sorted(labels.items())))]


def test_it_exposes_the_queue_figures_as_gauges(client, queue, alice):
    items = make_items(queue, 6)
    decide_after(items[0], alice, seconds=40, verdict="reject", reason="fraud")
    decide_after(items[1], alice, seconds=80, verdict="reject", reason="fraud")
    claim_next(queue=queue, reviewer=alice)
    age_item(items[5], seconds=600)

    samples = scrape(client)

    assert value(samples, "items_pending", queue="kyc") == 3
    assert value(samples, "items_leased", queue="kyc") == 1
    assert value(samples, "max_in_flight", queue="kyc") == 1000
    assert 600 <= value(samples, "oldest_pending_age_seconds", queue="kyc") < 660
    assert value(samples, "open_items_by_lease_count", queue="kyc", lease_count="0") == 3
    assert value(samples, "open_items_by_lease_count", queue="kyc", lease_count="1") == 1
    assert value(samples, "decisions_window", queue="kyc") == 2
    assert value(samples, "decisions_current_hour", queue="kyc") == 2
    assert value(samples, "handling_time_seconds", queue="kyc", quantile="0.5") == pytest.approx(
        60, abs=5
    )
    assert value(samples, "lease_ttl_seconds", queue="kyc") == 300
    assert (
        value(samples, "reason_code_decisions", queue="kyc", verdict="reject", reason_code="fraud")
        == 2
    )
    assert value(samples, "decisions_unapplied", queue="kyc") == 2


def test_it_reports_zeros_and_omits_unknowable_samples_for_an_empty_queue(client, queue):
    samples = scrape(client)

    assert value(samples, "items_pending", queue="escalation") == 0
    assert value(samples, "oldest_pending_age_seconds", queue="escalation") == 0
    assert value(samples, "apply_lag_seconds", queue="escalation") == 0
    assert value(samples, "effect_jobs_dead", queue="escalation") == 0
    # No decisions: no percentile and no suggested TTL, rather than a misleading zero.
    assert (
        "reviewconsole_handling_time_seconds",
        (("quantile", "0.5"), ("queue", "escalation")),
    ) not in samples
    assert ("reviewconsole_suggested_lease_ttl_seconds", (("queue", "escalation"),)) not in samples


def test_it_exposes_apply_lag_overdue_and_dead_jobs(client, queue, alice):
    items = make_items(queue, 3)
    old = decide_after(items[0], alice, seconds=10)
    backdate_decision(old, seconds=15 * 60)
    dead = decide_after(items[1], alice, seconds=10)
    mark_dead(dead)
    decide_after(items[2], alice, seconds=10)

    samples = scrape(client)

    assert value(samples, "decisions_unapplied", queue="kyc") == 3
    assert value(samples, "decisions_unapplied_overdue", queue="kyc") == 1
    assert value(samples, "effect_jobs_dead", queue="kyc") == 1
    assert 15 * 60 <= value(samples, "apply_lag_seconds", queue="kyc") < 16 * 60


def test_it_costs_the_same_few_queries_whatever_the_number_of_queues(client, queue, alice):
    make_items(queue, 3)
    with CaptureQueriesContext(connection) as few:
        client.get("/metrics")
    for n in range(5):
        make_items(make_queue(f"extra-{n}"), 3)
    with CaptureQueriesContext(connection) as many:
        client.get("/metrics")

    # Seven for the queue figures, three for the deadline and hold gauges (queues, SLA_OPEN,
    # SLA_DECISIONS), three for the second-person lanes (selectors/lane_figures.py), one for the
    # sealer's backlog.
    assert len(many) == len(few) == 14


def test_it_is_open_when_no_token_is_configured(client, settings, queue):
    settings.METRICS_TOKEN = ""

    assert client.get("/metrics").status_code == 200


def test_it_requires_the_bearer_token_when_one_is_configured(client, settings, queue):
    settings.METRICS_TOKEN = "s3cret-scrape-token"

    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    samples = scrape(client, HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    assert value(samples, "items_pending", queue="kyc") == 0


def test_it_speaks_openmetrics_when_the_scraper_asks(client, queue):
    response = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")

    assert response["Content-Type"].startswith("application/openmetrics-text")
    families = {f.name: f for f in openmetrics_families(response.content.decode())}
    [sample] = [
        s for s in families["reviewconsole_items_pending"].samples if s.labels["queue"] == "kyc"
    ]
    assert sample.value == 0


def test_it_counts_effect_jobs_waiting_behind_a_dead_job(client, queue, alice, supervisor):
    item, other, third = make_items(queue, 3)
    original = decide_after(item, alice, seconds=20, verdict="reject", reason="fraud")
    mark_dead(original)
    overturn_decision(
        decision_id=original.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    mark_dead(decide_after(other, alice, seconds=20))  # dead, nothing of its item waits
    decide_after(third, alice, seconds=20)  # live, behind nothing

    samples = scrape(client)

    assert value(samples, "effect_jobs_dead", queue="kyc") == 2
    assert value(samples, "effect_jobs_blocked", queue="kyc") == 1
    assert value(samples, "decisions_unapplied", queue="kyc") == 4


def test_it_exposes_what_waits_for_the_sealer(client, queue, alice):
    from queue_app.chain import seal_all

    [item] = make_items(queue, 1)
    decision = decide_after(item, alice, seconds=30)
    backdate_decision(decision, seconds=600)
    samples = scrape(client)
    assert value(samples, "unsealed_entries", kind="decision") == 1
    assert value(samples, "unsealed_entries", kind="outcome") == 0
    assert 600 <= value(samples, "unsealed_oldest_age_seconds", kind="decision") < 700
    assert value(samples, "unsealed_oldest_age_seconds", kind="outcome") == 0

    seal_all()
    samples = scrape(client)
    assert value(samples, "unsealed_entries", kind="decision") == 0
    assert value(samples, "unsealed_oldest_age_seconds", kind="decision") == 0


def test_it_counts_an_outcome_waiting_for_the_sealer(client, queue, alice, reviewers_group):
    from django.contrib.auth.models import User

    from queue_app.chain import seal_all
    from queue_app.models import CheckPolicy
    from queue_app.services import claim_lane_task, confirm_check
    from tests.lanes.conftest import decide_one

    CheckPolicy.objects.create(queue=queue, verdict="approve")
    carol = User.objects.create_user("carol")
    carol.groups.add(reviewers_group)
    decide_one(queue, alice)
    seal_all()  # the maker's decision: only the confirmation below waits
    task = claim_lane_task(queue=queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    backdate_outcome(task.pk, seconds=300)
    samples = scrape(client)
    assert value(samples, "unsealed_entries", kind="outcome") == 1
    assert value(samples, "unsealed_entries", kind="decision") == 0
    assert 300 <= value(samples, "unsealed_oldest_age_seconds", kind="outcome") < 400
    assert value(samples, "unsealed_oldest_age_seconds", kind="decision") == 0
