"""An item's deadline runs until its outcome is final: a decision that needs a check is final when
the checker confirms it (migrations 0021 and 0022).

Before, an item awaiting its check counted neither as open work nor as breached, and a confirmed
item kept the maker's time: a check left waiting past the deadline showed nowhere.
"""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.utils import timezone

from queue_app.models import LaneOutcome, LaneTask, Queue, ReviewItem
from queue_app.ops.doctor_checks import Thresholds, check_sla_breach
from queue_app.selectors.deadline_figures import read_sla
from queue_app.services import (
    claim_lane_task,
    claim_next,
    confirm_check,
    return_check,
    submit_decision,
)
from tests.api.conftest import caller_for, make_client
from tests.conftest import shown_hash
from tests.console.conftest import login
from tests.lanes.conftest import decide_one, new_item
from tests.ops.conftest import backdate_decision, backdate_outcome, operator  # noqa: F401

pytestmark = pytest.mark.django_db

deadline_migration = importlib.import_module("queue_app.migrations.0021_deadline_until_check")


def due(item_id: int, **delta: float) -> None:
    """Set the item's deadline to now + delta (item rows are working state)."""
    ReviewItem.objects.filter(pk=item_id).update(due_at=timezone.now() + timedelta(**delta))


def figures(queue: Queue):
    return next(f for f in read_sla() if f.queue_id == queue.pk)


def awaiting(queue: Queue, maker: User, **delta: float):
    """A decision of the maker's waiting for its check, on an item due at now + delta."""
    decision = decide_one(queue, maker)
    assert ReviewItem.objects.get(pk=decision.item_id).state == "awaiting_check"
    due(decision.item_id, **delta)
    return decision


def test_a_check_left_waiting_past_the_deadline_is_a_breach_everywhere(checked_queue, alice, carol):
    decision = awaiting(checked_queue, alice, minutes=-10)
    item_id = decision.item_id

    f = figures(checked_queue)
    assert (f.breached, f.breached_checks) == (1, 1)
    doctor = check_sla_breach(Thresholds())
    assert not doctor.ok
    assert "recon (1, 1 awaiting their check)" in doctor.summary
    assert "Checks lane" in doctor.advice
    home = login(alice).get("/").content.decode()
    row = home[home.index('data-queue="recon"') :]
    assert 'breached-count breached">1<' in row[: row.index("</tr>")]
    page = login(carol).get(f"/items/{item_id}/").content.decode()
    assert 'class="deadline breached"' in page
    assert "awaiting its check" in page and "overdue by 10 min" in page
    _, token = make_client("robot", [checked_queue])
    assert caller_for(token).get(f"/items/{item_id}").body["breached"] is True

    backdate_decision(decision, seconds=600)  # the maker decided ten minutes ago
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    outcome = confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    # Final now: no longer open work, and decided (after its deadline) at the confirmation.
    item = ReviewItem.objects.get(pk=item_id)
    assert item.decided_at == LaneOutcome.objects.get(pk=outcome.pk).created_at
    assert item.decided_at - type(decision).objects.get(pk=decision.pk).created_at == timedelta(
        seconds=600
    )
    assert figures(checked_queue).breached == 0
    assert check_sla_breach(Thresholds()).ok
    assert caller_for(token).get(f"/items/{item_id}").body["breached"] is True
    assert "Decided after its deadline" in login(carol).get(f"/items/{item_id}/").content.decode()


def test_a_check_waiting_within_the_deadline_is_at_risk_not_breached(checked_queue, alice):
    decision = awaiting(checked_queue, alice, minutes=30)  # the queue warns an hour ahead
    f = figures(checked_queue)
    assert (f.breached, f.breached_checks, f.at_risk) == (0, 0, 1)
    assert check_sla_breach(Thresholds()).ok
    page = login(alice).get(f"/items/{decision.item_id}/").content.decode()
    assert 'class="deadline at-risk"' in page


def test_late_outcomes_count_a_checked_decision_when_it_was_confirmed(
    checked_queue, alice, bob, carol
):
    # Decided in time, confirmed after the deadline: late. Decided and confirmed in time: not.
    # Still awaiting, or returned: not final, so not counted at all. A decision that needs no
    # check (below the policy's threshold) counts when recorded.
    late = awaiting(checked_queue, alice, hours=10)
    in_time = awaiting(checked_queue, bob, hours=10)
    returned = awaiting(checked_queue, bob, hours=10)
    awaiting(checked_queue, alice, hours=10)
    plain = decide_one(checked_queue, alice, variance_amount="5.00")
    due(plain.item_id, hours=1)
    for decision in (late, in_time, returned):
        task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
        assert task.decision_id == decision.pk
        if decision is returned:
            return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="why")
            continue
        if decision is late:
            # Decided two minutes ago, due one minute ago, confirmed now. (The test runs in one
            # transaction: the database's now() is the same for every row written in it.)
            backdate_decision(decision, seconds=120)
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE queue_app_reviewitem SET due_at = now() - interval '1 minute' "
                    "WHERE id = %s",
                    [decision.item_id],
                )
        confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)

    f = figures(checked_queue)
    assert (f.decided_with_deadline, f.decided_late) == (3, 1)


def test_a_confirmation_older_than_the_window_is_not_counted(checked_queue, alice, carol):
    awaiting(checked_queue, alice, hours=1)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    assert figures(checked_queue).decided_with_deadline == 1
    backdate_outcome(task.pk, seconds=25 * 3600)
    assert figures(checked_queue).decided_with_deadline == 0


def test_ops_and_metrics_show_a_breached_check(checked_queue, alice, operator):  # noqa: F811
    awaiting(checked_queue, alice, minutes=-1)
    client = Client()
    client.force_login(operator)
    html = client.get("/ops/").content.decode()
    row = html[html.index('id="sla-recon"') :]
    row = row[: row.index("</tr>")]
    assert 'data-figure="breached">1 <span' in row
    assert 'data-figure="breached-checks">1 awaiting check<' in row
    metrics = Client().get("/metrics").content.decode()
    assert 'reviewconsole_items_breached_awaiting_check{queue="recon"} 1.0' in metrics
    assert 'reviewconsole_items_breached{queue="recon"} 1.0' in metrics


def test_the_migration_dates_confirmed_items_by_their_confirmation(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    outcome = confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    backdate_outcome(task.pk, seconds=3600)
    confirmed_at = LaneOutcome.objects.get(pk=outcome.pk).created_at
    # As an item confirmed before 0021 was left: decided at the maker's time.
    ReviewItem.objects.filter(pk=decision.item_id).update(decided_at=decision.created_at)
    with connection.cursor() as cursor:
        cursor.execute(deadline_migration.FORWARD)
    assert ReviewItem.objects.get(pk=decision.item_id).decided_at == confirmed_at
    with connection.cursor() as cursor:
        cursor.execute(deadline_migration.BACKWARD)
    assert ReviewItem.objects.get(pk=decision.item_id).decided_at == decision.created_at


def decided_due(queue: Queue, maker: User, key: str, **delta: float):
    """An item due at now + delta (none without delta), decided by the maker: its check queued."""
    item = new_item(queue, key)
    if delta:
        due(item.pk, **delta)
    leased = claim_next(queue=queue, reviewer=maker)
    assert leased.pk == item.pk
    return submit_decision(
        item_id=leased.pk,
        reviewer=maker,
        lease_token=leased.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(leased),
    )


def test_a_check_carries_its_items_deadline(checked_queue, alice):
    decision = decided_due(checked_queue, alice, "dated", hours=3)
    task = LaneTask.objects.get(decision=decision, kind="check")
    assert task.due_at == ReviewItem.objects.get(pk=decision.item_id).due_at
    assert task.due_at is not None


def test_next_check_takes_the_earliest_deadline_first_and_none_last(checked_queue, alice, carol):
    # Queued in this order: no deadline, due in a day, due in an hour, overdue.
    queued = [
        decided_due(checked_queue, alice, "none"),
        decided_due(checked_queue, alice, "day", days=1),
        decided_due(checked_queue, alice, "hour", hours=1),
        decided_due(checked_queue, alice, "late", minutes=-5),
    ]
    order = []
    for _ in queued:
        task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
        order.append(task.decision_id)
        confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    assert order == [d.pk for d in reversed(queued)]


def test_the_migration_gives_open_checks_their_items_deadline(checked_queue, alice):
    waiting = awaiting(checked_queue, alice, hours=2)
    LaneTask.objects.filter(decision=waiting).update(due_at=None)  # as queued before 0021
    with connection.cursor() as cursor:
        cursor.execute(deadline_migration.CHECK_DEADLINES)
    task = LaneTask.objects.get(decision=waiting)
    assert task.due_at == ReviewItem.objects.get(pk=waiting.item_id).due_at
