"""doctor: each named check fails when its fault is really there, and all pass when none is."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.utils import timezone

from queue_app.apply import apply_one
from queue_app.models import EffectJob, ReviewItem
from queue_app.ops.doctor_checks import Thresholds, run_checks
from queue_app.services import claim_batch, claim_next, overturn_decision, retry_effect_jobs
from tests.conftest import make_items, make_queue
from tests.ops.conftest import (
    age_item,
    backdate_decision,
    backdate_outcome,
    decide_after,
    mark_dead,
)
from tests.worker.conftest import database_url


@pytest.fixture(autouse=True)
def no_dead_tuples_left_by_earlier_tests(django_db_blocker):
    """Vacuum the queue tables that hold dead tuples, from a connection of its own.

    Dead-tuple counts are cumulative statistics, not transactional: rows an earlier test
    inserted and rolled back (a bulk-loaded plan test, say) stay counted as dead until
    autovacuum passes, and BLOAT would fail in a healthy database depending on test order and
    on autovacuum's timing. Aborted rows are removable at once, whatever this test holds open.
    """
    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    with psycopg.connect(url, autocommit=True) as admin:
        bloated = admin.execute(
            "SELECT relname FROM pg_stat_user_tables"
            " WHERE relname LIKE 'queue\\_app\\_%' AND n_dead_tup > 0"
        ).fetchall()
        for (table,) in bloated:
            admin.execute(f'VACUUM "{table}"')


def results(thresholds: Thresholds | None = None) -> dict[str, object]:
    return {r.name: r for r in run_checks(thresholds)}


def failed(thresholds: Thresholds | None = None) -> set[str]:
    return {name for name, r in results(thresholds).items() if not r.ok}


@pytest.mark.django_db
def test_it_passes_every_check_on_a_healthy_database(queue, alice, bob, capsys):
    items = make_items(queue, 5)
    decide_after(items[0], alice, seconds=30)  # unapplied, but only just made
    claim_next(queue=queue, reviewer=alice)
    claim_next(queue=queue, reviewer=bob)

    assert failed() == set()
    call_command("doctor")  # no SystemExit: exit status 0
    out = capsys.readouterr().out
    for name in (
        "DOUBLE_LEASE",
        "LEASE_LEAK",
        "STARVATION",
        "LOCK_CONTENTION",
        "UNAPPLIED",
        "BLOCKED_EFFECTS",
        "BLOAT",
        "SLA_BREACH",
        "LANE_BACKLOG",
        "UNSEALED",
    ):
        assert f"ok   {name}" in out
    assert "All 10 checks passed." in out


@pytest.mark.django_db
def test_it_detects_a_reviewer_holding_two_live_leases(queue, alice):
    first, second = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    # A write outside the claim statement hands Alice a second live lease in the same queue.
    ReviewItem.objects.filter(pk=second.pk).update(
        state="leased",
        lease_owner=alice,
        lease_token="6f1c1f5e-6a8e-4f7e-9a59-7d2b0d3f8c11",
        lease_expires=ReviewItem.objects.get(pk=first.pk).lease_expires,
        lease_count=1,
    )

    result = results()["DOUBLE_LEASE"]

    assert not result.ok
    assert "alice in kyc (2)" in result.summary
    assert result.details[0]["item_ids"] == [first.pk, second.pk]


@pytest.mark.django_db
def test_it_detects_leases_near_the_ceiling(reviewers_group, alice):
    small = make_queue("small", group=reviewers_group, max_in_flight=10)
    make_items(small, 12)
    claim_batch(queue=small, worker=alice, n=9, ttl=timedelta(minutes=5))

    result = results()["LEASE_LEAK"]

    assert not result.ok
    assert "small 9/10" in result.summary


@pytest.mark.django_db
def test_it_detects_a_stale_pending_item_while_reviewers_work(queue, alice):
    stale, _ = make_items(queue, 2)
    age_item(stale, seconds=3 * 3600)
    claim_next(queue=queue, reviewer=alice)  # takes the stale one...
    [waiting] = make_items(queue, 1, prefix="late")
    age_item(waiting, seconds=2 * 3600)  # ...while another waits two hours

    result = results()["STARVATION"]

    assert not result.ok
    assert "kyc (2:00:0" in result.summary  # two hours and the few seconds the test took


@pytest.mark.django_db
def test_it_does_not_call_an_unworked_backlog_starvation(queue):
    [stale] = make_items(queue, 1)
    age_item(stale, seconds=3 * 3600)

    result = results()["STARVATION"]

    assert result.ok
    assert "no reviewer is active" in result.summary


@pytest.mark.django_db
def test_it_detects_an_old_unapplied_decision(queue, alice, settings):
    settings.UNAPPLIED_ALERT_MINUTES = 5
    old, fresh = make_items(queue, 2)
    backdate_decision(decide_after(old, alice, seconds=30), seconds=10 * 60)
    decide_after(fresh, alice, seconds=30)

    result = results()["UNAPPLIED"]

    assert not result.ok
    assert result.summary.startswith("1 decision(s) not applied after 0:05:00")


@pytest.mark.django_db
def test_it_reports_failures_as_json_and_exits_non_zero(queue, alice, capsys):
    [item] = make_items(queue, 1)
    backdate_decision(decide_after(item, alice, seconds=30), seconds=10 * 60)

    with pytest.raises(SystemExit) as exit_info:
        call_command("doctor", "--json")

    assert exit_info.value.code == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False
    by_name = {check["name"]: check for check in document["checks"]}
    assert by_name["UNAPPLIED"]["ok"] is False
    assert by_name["DOUBLE_LEASE"]["ok"] is True


@pytest.mark.django_db
def test_it_prints_failures_with_advice(queue, alice, capsys):
    [item] = make_items(queue, 1)
    backdate_decision(decide_after(item, alice, seconds=30), seconds=10 * 60)

    with pytest.raises(SystemExit):
        call_command("doctor")

    out = capsys.readouterr().out
    assert "FAIL UNAPPLIED" in out
    assert "run_apply_worker" in out
    # A decision ten minutes old is unsealed too: the apply worker does both.
    assert "FAIL UNSEALED" in out
    assert "2 of 10 checks failed." in out


@pytest.mark.django_db
def test_it_names_an_item_whose_effects_wait_behind_a_dead_job(queue, alice, supervisor, capsys):
    item, other = make_items(queue, 2)
    original = decide_after(item, alice, seconds=30, verdict="reject", reason="fraud")
    mark_dead(original, error="webhook answered 400")
    corrected = overturn_decision(
        decision_id=original.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    alone = decide_after(other, alice, seconds=30)
    mark_dead(alone)  # dead, but nothing of its item waits behind it

    result = results()["BLOCKED_EFFECTS"]

    assert not result.ok
    assert result.summary.startswith("1 item(s) have effects held back by a dead job")
    assert f"item {item.pk} (kyc): decision {original.pk} is dead after 8 attempt(s)" in (
        result.summary
    )
    assert "webhook answered 400" in result.summary
    assert f"decision(s) {corrected.pk} wait behind it" in result.summary
    assert f"item {other.pk} " not in result.summary
    assert "Retry it on /ops/" in result.advice
    with pytest.raises(SystemExit):
        call_command("doctor")
    assert "FAIL BLOCKED_EFFECTS" in capsys.readouterr().out


@pytest.mark.django_db
def test_it_passes_blocked_effects_once_the_dead_job_is_retried_and_applied(
    queue, alice, supervisor, retrier
):
    [item] = make_items(queue, 1)
    original = decide_after(item, alice, seconds=30, verdict="reject", reason="fraud")
    mark_dead(original)
    overturn_decision(
        decision_id=original.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    assert not results()["BLOCKED_EFFECTS"].ok

    retry_effect_jobs(decision_ids=[original.pk], operator=retrier)
    # Due now (this test is one transaction, whose now() is its start).
    EffectJob.objects.update(next_attempt_at=timezone.now() - timedelta(hours=1))
    while apply_one():
        pass

    assert results()["BLOCKED_EFFECTS"].ok


# -- faults that need a second, real connection ---------------------------------------------------


class HeldTransaction:
    """A transaction on its own connection in a thread, holding what `statement` locks."""

    def __init__(self, statement: str, params: list[object]) -> None:
        self.statement, self.params = statement, params
        self.ready, self.release = threading.Event(), threading.Event()
        self.pid: int | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                self.pid = cursor.fetchone()[0]
                self.ready.set()  # before the statement: it may block
                cursor.execute(self.statement, self.params)
                self.release.wait(timeout=60)
        except BaseException as exc:
            self.error = exc
        finally:
            self.ready.set()
            connections.close_all()

    def __enter__(self) -> HeldTransaction:
        self.thread.start()
        self.ready.wait(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()


def wait_until(predicate, *, what: str, threads: tuple[HeldTransaction, ...] = ()) -> None:
    # Synchronisation, not a timing assertion: poll until the other connection has got there
    # (generously: the machine is shared and sometimes very busy).
    for _ in range(1200):
        for held in threads:
            if held.error is not None:
                raise held.error
        if predicate():
            return
        time.sleep(0.05)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, state, wait_event_type, wait_event, left(query, 80) FROM pg_stat_activity"
            " WHERE datname = current_database()"
        )
        activity = cursor.fetchall()
    raise AssertionError(f"gave up waiting for {what}; activity: {activity}")


def lock_state(pid: int) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row[0] if row else None


def idle_in_transaction(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return bool(row) and row[0] == "idle in transaction"


LOCK_ITEM = "SELECT id FROM queue_app_reviewitem WHERE id = %s FOR UPDATE"
TOUCH_ITEM = "UPDATE queue_app_reviewitem SET priority = priority + 1 WHERE id = %s"


@pytest.mark.django_db(transaction=True)
def test_it_detects_a_long_transaction_holding_a_row_lock(queue):
    [item] = make_items(queue, 1)

    with HeldTransaction(LOCK_ITEM, [item.pk]) as holder:
        wait_until(
            lambda: idle_in_transaction(holder.pid), what="the lock to be taken", threads=(holder,)
        )
        # Any open transaction counts as long with a zero threshold: no waiting in the test.
        result = results(Thresholds(long_transaction=timedelta(0)))["LOCK_CONTENTION"]
    holder.thread.join(timeout=30)

    assert holder.error is None
    assert not result.ok
    assert f"pid {holder.pid} in a transaction" in result.summary
    [detail] = [d for d in result.details if d["pid"] == holder.pid]
    assert "queue_app_reviewitem" in detail["tables"]


@pytest.mark.django_db(transaction=True)
def test_it_detects_a_claim_waiting_on_a_held_lock(queue):
    [item] = make_items(queue, 1)

    with HeldTransaction(LOCK_ITEM, [item.pk]) as holder:
        wait_until(
            lambda: idle_in_transaction(holder.pid), what="the lock to be taken", threads=(holder,)
        )
        with HeldTransaction(TOUCH_ITEM, [item.pk]) as waiter:
            wait_until(
                lambda: lock_state(waiter.pid) == "Lock",
                what="the waiter to block",
                threads=(holder, waiter),
            )
            # Long transactions are tolerated here (an hour): only the wait is reported.
            result = results(
                Thresholds(long_transaction=timedelta(hours=1), lock_wait=timedelta(0))
            )["LOCK_CONTENTION"]
        holder.release.set()
        waiter.thread.join(timeout=30)
    holder.thread.join(timeout=30)

    assert (holder.error, waiter.error) == (None, None)
    assert not result.ok
    assert f"pid {waiter.pid} waits on pid(s) [{holder.pid}]" in result.summary


@pytest.mark.django_db(transaction=True)
def test_it_passes_lock_contention_once_the_transaction_ends(queue):
    [item] = make_items(queue, 1)

    with HeldTransaction(LOCK_ITEM, [item.pk]) as holder:
        wait_until(
            lambda: idle_in_transaction(holder.pid), what="the lock to be taken", threads=(holder,)
        )
    holder.thread.join(timeout=30)

    assert results(Thresholds(long_transaction=timedelta(0)))["LOCK_CONTENTION"].ok


@pytest.mark.django_db(transaction=True)
def test_it_detects_dead_tuples_piling_up(queue):
    items = make_items(queue, 20)
    with connection.cursor() as cursor:
        # Autovacuum would (rightly) clean up behind the test's back; keep it away meanwhile.
        cursor.execute("ALTER TABLE queue_app_reviewitem SET (autovacuum_enabled = false)")
        try:
            for _ in range(10):
                cursor.execute(
                    "UPDATE queue_app_reviewitem SET priority = priority + 1 WHERE id = ANY(%s)",
                    [[i.pk for i in items]],
                )
            cursor.execute("SELECT pg_stat_force_next_flush()")
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            result = results(Thresholds(bloat_min_dead=150, bloat_dead_ratio=1.0))["BLOAT"]
        finally:
            cursor.execute("ALTER TABLE queue_app_reviewitem RESET (autovacuum_enabled)")

    assert not result.ok
    assert "queue_app_reviewitem" in result.summary
    assert "autovacuum_vacuum_scale_factor" in result.advice


@pytest.mark.django_db
def test_it_detects_decisions_and_outcomes_the_sealer_has_not_taken(queue, alice, reviewers_group):
    from queue_app.chain import seal_all
    from queue_app.models import CheckPolicy
    from tests.lanes.conftest import confirm_one

    checked = make_queue("recon", group=reviewers_group)
    CheckPolicy.objects.create(queue=checked, verdict="approve")
    carol = User.objects.create_user("carol")
    carol.groups.add(reviewers_group)
    outcome = confirm_one(checked, alice, carol)
    assert results()["UNSEALED"].ok  # just made: the sealer has a second or so

    backdate_decision(outcome.task.decision, seconds=3600)
    backdate_outcome(outcome.pk, seconds=3600)
    result = results()["UNSEALED"]
    assert not result.ok
    assert "1 decisions waiting" in result.summary and "1 outcomes waiting" in result.summary
    assert "seal_decisions" in result.advice
    assert [d["entries"] for d in result.details] == ["decisions", "outcomes"]

    seal_all()
    assert results()["UNSEALED"].ok
