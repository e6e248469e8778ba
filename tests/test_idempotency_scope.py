"""The key scope in the database: per client and intake queue, NULL clients included."""

from __future__ import annotations

import importlib
import threading
import time

import pytest
from django.db import connection, connections, transaction

from queue_app.apply import apply_batch
from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import claim_next, create_item, escalate_abandoned
from tests.conftest import backdate_lease, make_items
from tests.worker.conftest import decide

pytestmark = pytest.mark.django_db

scope_migration = importlib.import_module("queue_app.migrations.0006_idempotency_scope")


def _wait_until_blocked(pid: int) -> None:
    """Return once the backend pid waits for a lock (an INSERT behind an uncommitted twin)."""
    with connections["default"].cursor() as cursor:
        for _ in range(6000):
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
            if cursor.fetchone() == ("Lock",):
                return
            time.sleep(0.01)
    raise AssertionError(f"backend {pid} never waited for the first insert")


@pytest.mark.django_db(transaction=True)
def test_two_connections_inserting_one_key_without_a_client_make_one_item(queue):
    # The console, seeding and commands have no client: NULL must still collide with NULL.
    inserted, go, pid_known = threading.Event(), threading.Event(), threading.Event()
    results: dict[str, tuple[int, bool]] = {}
    second_pid: list[int] = []

    def first() -> None:
        try:
            with transaction.atomic():
                results["first"] = _made(create_item(queue=queue, subject="a", payload={}, **KEY))
                inserted.set()
                go.wait(60)
        finally:
            connections.close_all()

    def second() -> None:
        try:
            inserted.wait(60)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                second_pid.append(cursor.fetchone()[0])
            pid_known.set()
            results["second"] = _made(create_item(queue=queue, subject="a", payload={}, **KEY))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert inserted.wait(60) and pid_known.wait(60)
    _wait_until_blocked(second_pid[0])
    go.set()
    for thread in threads:
        thread.join(60)

    assert ReviewItem.objects.count() == 1
    item_id = ReviewItem.objects.get().pk
    assert results == {"first": (item_id, True), "second": (item_id, False)}


KEY = {"idempotency_key": "console-1", "source_hash": "s1"}


def _made(result: tuple[ReviewItem, bool]) -> tuple[int, bool]:
    return result[0].pk, result[1]


def test_a_raw_insert_without_an_intake_queue_is_scoped_to_its_queue(queue):
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_reviewitem
                (queue_id, state, priority, created_at, subject, payload, idempotency_key,
                 source_hash, trace_id, lease_count)
            VALUES (%s, 'pending', 0, now(), 'bulk', '{}', 'bulk-1', '', gen_random_uuid(), 0)
            RETURNING intake_queue_id
            """,
            [queue.pk],
        )
        assert cursor.fetchone() == (queue.pk,)


# -- the migration's story for existing rows ----------------------------------------------------


def _as_before_the_migration(keys: dict[int, str]) -> None:
    """Put rows back the way 0006 finds them: keys as given, no intake queue, no link."""
    with connection.cursor() as cursor:
        # Inside the test's transaction only: the guard on the scope columns is what 0006
        # installs after backfilling, so the backfill itself runs without it.
        # ALTER TABLE needs the deferred foreign-key checks of earlier inserts done first.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE queue_app_reviewitem DISABLE TRIGGER item_key_scope_fixed")
        for item_id, key in keys.items():
            cursor.execute(
                "UPDATE queue_app_reviewitem SET intake_queue_id = queue_id, "
                "escalated_by_decision_id = NULL, idempotency_key = %s WHERE id = %s",
                [key, item_id],
            )


def test_the_migration_links_only_escalations_the_effect_really_made(queue, alice):
    genuine, other = decide(queue, alice, 2, verdict="escalate")
    assert apply_batch(batch_size=10) == 2
    # Decisions whose effects have not run yet: their keys are free for anyone to plant.
    pending, pending_too = decide(queue, alice, 2, verdict="escalate", prefix="later")
    # An old escalation item, as the old effect made it: the derived key and the origin link.
    old = ReviewItem.objects.get(escalated_by_decision=genuine)
    # An intake item someone planted under a pending decision's key: no origin link.
    (planted,) = make_items(queue.escalation_queue, 1, prefix="planted")
    # An escalation item whose key names an escalate decision on another item than its origin.
    mismatched = ReviewItem.objects.get(escalated_by_decision=other)
    _as_before_the_migration(
        {
            old.pk: f"escalation-of-decision-{genuine.pk}",
            planted.pk: f"escalation-of-decision-{pending.pk}",
            mismatched.pk: f"escalation-of-decision-{pending_too.pk}",
        }
    )

    with connection.cursor() as cursor:
        cursor.execute(scope_migration.LINK_OLD_ESCALATIONS)

    links = dict(
        ReviewItem.objects.filter(pk__in=[old.pk, planted.pk, mismatched.pk]).values_list(
            "pk", "escalated_by_decision_id"
        )
    )
    assert links == {old.pk: genuine.pk, planted.pk: None, mismatched.pk: None}


def test_the_migration_scopes_an_auto_escalated_item_to_the_queue_it_was_sent_to(queue, alice):
    (moved,) = make_items(queue, 1, prefix="old")
    (stayed,) = make_items(queue, 1, prefix="stay")
    for _ in range(queue.escalation_threshold):
        lease = claim_next(queue=queue, reviewer=alice)
        backdate_lease(lease.pk)
    assert escalate_abandoned() >= 1
    assert ItemEvent.objects.filter(item=moved, kind="auto_escalated").exists()
    _as_before_the_migration({moved.pk: "kyc-old-0", stayed.pk: "kyc-stay-0"})

    with connection.cursor() as cursor:
        cursor.execute(scope_migration.BACKFILL_INTAKE_QUEUE)

    rows = dict(
        ReviewItem.objects.filter(pk__in=[moved.pk, stayed.pk]).values_list("pk", "intake_queue_id")
    )
    assert rows == {moved.pk: queue.pk, stayed.pk: queue.pk}
    assert ReviewItem.objects.get(pk=moved.pk).queue_id == queue.escalation_queue_id
