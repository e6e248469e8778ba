"""The operator figures, on seeded states whose answers are known in advance."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection

from queue_app.models import ReviewItem
from queue_app.selectors.queue_figures import QueueFigures, read_snapshot, suggest_lease_ttl
from queue_app.services import claim_next, overturn_decision
from tests.conftest import make_items, make_queue
from tests.ops.conftest import (
    age_item,
    backdate_decision,
    decide_after,
    lease_as_if_claimed,
    mark_applied,
    mark_dead,
)

pytestmark = pytest.mark.django_db


def figures_for(slug: str) -> QueueFigures:
    return next(q for q in read_snapshot().queues if q.slug == slug)


def test_it_reports_zeros_for_an_empty_queue(queue):
    empty = figures_for("escalation")
    assert (empty.pending, empty.leased, empty.expired_leases) == (0, 0, 0)
    assert empty.oldest_pending_age is None
    assert empty.lease_histogram == [0, 0, 0, 0, 0, 0]
    assert len(empty.decisions_per_hour) == 24
    assert all(count == 0 for _, count in empty.decisions_per_hour)
    assert (empty.ttd_samples, empty.ttd_p50, empty.ttd_p99) == (0, None, None)
    assert empty.suggested_lease_ttl is None
    assert empty.reason_shares == {}
    assert (empty.unapplied, empty.dead_jobs) == (0, 0)


def test_it_counts_pending_and_leased_work_and_the_oldest_pending_age(queue, alice, bob):
    items = make_items(queue, 5)
    age_item(items[3], seconds=2 * 3600)
    claim_next(queue=queue, reviewer=alice)  # takes the oldest: items[3]
    claim_next(queue=queue, reviewer=bob)
    age_item(items[4], seconds=3600)

    kyc = figures_for("kyc")

    assert (kyc.pending, kyc.leased, kyc.expired_leases) == (3, 2, 0)
    # items[3] is leased now, so the oldest *pending* one is items[4], an hour old.
    assert timedelta(hours=1) <= kyc.oldest_pending_age < timedelta(hours=1, minutes=1)


def test_it_counts_expired_leases_as_leased_and_expired(queue, alice):
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    ReviewItem.objects.filter(pk=item.pk).update(
        lease_expires=item.lease_expires - timedelta(hours=2)
    )

    kyc = figures_for("kyc")

    assert (kyc.pending, kyc.leased, kyc.expired_leases) == (1, 1, 1)


def test_it_buckets_open_items_by_lease_count_with_a_top_bucket(queue):
    items = make_items(queue, 6)
    for item, count in zip(items, [0, 1, 1, 2, 5, 9], strict=True):
        ReviewItem.objects.filter(pk=item.pk).update(lease_count=count)

    kyc = figures_for("kyc")

    assert kyc.histogram_labels == ["0", "1", "2", "3", "4", "5+"]
    assert kyc.lease_histogram == [1, 2, 1, 0, 0, 2]


def test_it_leaves_decided_items_out_of_the_histogram(queue, alice):
    items = make_items(queue, 2)
    decide_after(items[0], alice, seconds=30)

    assert figures_for("kyc").lease_histogram == [1, 0, 0, 0, 0, 0]


def test_it_computes_handling_time_percentiles_from_the_deciding_claim(queue, alice):
    # Handling times 1, 2, ... 20 minutes: percentile_cont gives p50 = 10.5 min,
    # p90 = 18.1 min (1086 s), p99 = 19.81 min (1188.6 s).
    items = make_items(queue, 20)
    for minutes, item in enumerate(items, start=1):
        decide_after(item, alice, seconds=60 * minutes)

    kyc = figures_for("kyc")

    assert kyc.ttd_samples == 20
    # The decision lands a few milliseconds after the backdated claim's "now": allow 5 s.
    assert kyc.ttd_p50.total_seconds() == pytest.approx(630, abs=5)
    assert kyc.ttd_p90.total_seconds() == pytest.approx(1086, abs=5)
    assert kyc.ttd_p99.total_seconds() == pytest.approx(1188.6, abs=5)
    # 1188.6 s x 1.25 = 24.76 min, rounded up to the next minute.
    assert kyc.suggested_lease_ttl == timedelta(minutes=25)


def test_it_measures_from_the_last_claim_not_an_abandoned_earlier_one(queue, alice, bob):
    [item] = make_items(queue, 1)
    # Bob claimed it two hours ago and walked away; Alice took it and decided in 90 s.
    lease_as_if_claimed(item, bob, seconds_ago=7200)
    decide_after(item, alice, seconds=90)

    kyc = figures_for("kyc")

    assert kyc.ttd_samples == 1
    assert kyc.ttd_p50.total_seconds() == pytest.approx(90, abs=5)


def test_it_suggests_no_ttl_from_too_few_decisions():
    assert suggest_lease_ttl(p99=timedelta(minutes=3), samples=19) is None
    assert suggest_lease_ttl(p99=timedelta(minutes=3), samples=20) == timedelta(minutes=4)
    assert suggest_lease_ttl(p99=timedelta(seconds=10), samples=50) == timedelta(minutes=1)
    assert suggest_lease_ttl(p99=None, samples=50) is None


def test_it_counts_decisions_per_hour_in_the_right_hour(queue, alice):
    items = make_items(queue, 4)
    decisions = [decide_after(item, alice, seconds=10) for item in items]
    backdate_decision(decisions[0], seconds=3 * 3600)
    backdate_decision(decisions[1], seconds=30 * 3600)  # outside the 24-hour window

    kyc = figures_for("kyc")
    with connection.cursor() as cursor:
        cursor.execute("SELECT date_trunc('hour', now() - interval '3 hours')")
        three_hours_ago = cursor.fetchone()[0]

    by_hour = dict(kyc.decisions_per_hour)
    assert len(by_hour) == 24
    assert by_hour[three_hours_ago] == 1
    assert kyc.decisions_per_hour[-1][1] == 2
    assert kyc.decisions_last_window == 3


def test_it_shares_reason_codes_within_each_verdict(queue, alice):
    items = make_items(queue, 8)
    for item in items[:3]:
        decide_after(item, alice, seconds=10, verdict="reject", reason="fraud")
    decide_after(items[3], alice, seconds=10, verdict="reject", reason="document_expired")
    for item in items[4:]:
        decide_after(item, alice, seconds=10, verdict="approve", reason="verified")

    shares = figures_for("kyc").reason_shares

    assert [(s.code, s.decisions, s.share) for s in shares["reject"]] == [
        ("fraud", 3, 0.75),
        ("document_expired", 1, 0.25),
    ]
    assert [(s.code, s.decisions, s.share) for s in shares["approve"]] == [("verified", 4, 1.0)]


def test_it_reports_a_queue_with_pending_work_and_no_decisions_yet(queue):
    recon = make_queue("reconciliation")
    make_items(recon, 3)

    figures = figures_for("reconciliation")

    assert figures.pending == 3
    assert figures.decisions_last_window == 0
    assert figures.ttd_p50 is None
    assert figures.suggested_lease_ttl is None
    assert figures.reason_shares == {}


def test_it_counts_unapplied_overdue_and_dead_decisions(queue, alice, settings):
    settings.UNAPPLIED_ALERT_MINUTES = 5
    items = make_items(queue, 4)
    _fresh, old, applied, dead = (decide_after(i, alice, seconds=10) for i in items)
    backdate_decision(old, seconds=10 * 60)
    mark_applied(applied)
    backdate_decision(applied, seconds=60 * 60)
    mark_dead(dead)
    backdate_decision(dead, seconds=20 * 60)

    snapshot = read_snapshot()
    kyc = next(q for q in snapshot.queues if q.slug == "kyc")

    assert kyc.unapplied == 3  # fresh, old, dead
    assert kyc.unapplied_overdue == 2  # old, dead
    assert kyc.dead_jobs == 1
    assert timedelta(minutes=20) <= kyc.oldest_unapplied_age < timedelta(minutes=21)
    assert snapshot.unapplied_overdue == 2
    assert [(job.decision_id, job.queue, job.attempts) for job in snapshot.dead_jobs] == [
        (dead.pk, "kyc", 8)
    ]


def test_reason_codes_and_the_decision_count_both_leave_overturns_out(queue, alice):
    items = make_items(queue, 3)
    decided = [
        decide_after(items[0], alice, seconds=10, verdict="approve", reason="verified"),
        decide_after(items[1], alice, seconds=10, verdict="reject", reason="fraud"),
        decide_after(items[2], alice, seconds=10, verdict="escalate", reason="policy_gap"),
    ]
    overturn_decision(
        decision_id=decided[0].pk,
        admin=User.objects.create_superuser("root", password="pw-root"),
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )

    kyc = figures_for("kyc")

    # Three reviewer verdicts; the overturn is a correction, counted apart in both figures.
    assert kyc.decisions_last_window == 3
    assert sum(s.decisions for rows in kyc.reason_shares.values() for s in rows) == 3
    assert "overturn" not in kyc.reason_shares
    assert kyc.overturns_last_window == 1
