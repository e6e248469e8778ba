"""Lane claims and finishes under concurrency: separate connections, real commits."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from queue_app.apply import apply_batch
from queue_app.errors import StaleLease
from queue_app.models import EffectJob, LaneOutcome, LaneTask
from queue_app.services import claim_lane_task, confirm_check, return_check
from tests.blocking import BLOCK_WAIT_LIMIT_S, Session, wait_until_blocked_by_me
from tests.conftest import run_in_threads
from tests.lanes.conftest import bulk_checks
from tests.worker.conftest import ledger_counts

pytestmark = pytest.mark.django_db(transaction=True)


def _wait_until_waiting(session: Session) -> None:
    deadline = time.monotonic() + BLOCK_WAIT_LIMIT_S
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT cardinality(pg_blocking_pids(%s)) > 0", [session.pid])
            if cursor.fetchone()[0]:
                return
            assert session.error is None, session.error
            assert time.monotonic() < deadline, "the session never queued for the lock"
            time.sleep(0.005)


def _checkers(group, n: int) -> list[User]:
    users = [User.objects.create_user(f"checker{i}") for i in range(n)]
    for user in users:
        user.groups.add(group)
    return users


@pytest.mark.slow
def test_16_checkers_over_2000_waiting_checks_never_share_one(
    checked_queue, alice, reviewers_group, settings
):
    # What is proven here is exclusivity, not latency. A claimer whose snapshot still saw a
    # task open locks it, finds it taken on the recheck, and holds that lock until its COMMIT;
    # sixteen threads of one process on two busy cores can be descheduled for longer than the
    # default lock timeout in between, and a confirm waiting on it would fail the run.
    settings.REVIEW_LOCK_TIMEOUT_MS = settings.REVIEW_STATEMENT_TIMEOUT_MS = 60_000
    bulk_checks(checked_queue, alice, 2000)
    checkers = _checkers(reviewers_group, 16)

    def work(i: int) -> list[tuple[int, str]]:
        me = checkers[i]
        mine = []
        while (task := claim_lane_task(queue=checked_queue, kind="check", user=me)) is not None:
            mine.append((task.pk, str(task.lease_token)))
            confirm_check(task_id=task.pk, user=me, lease_token=task.lease_token)
        return mine

    results = run_in_threads(16, work)
    claimed = [task for mine in results for task in mine]
    ids = Counter(task_id for task_id, _ in claimed)
    # Nobody ever got a task another had: each was claimed once, by one checker, and
    # confirmed once, by them.
    assert len(ids) == 2000 and set(ids.values()) == {1}
    assert LaneOutcome.objects.filter(result="confirmed").count() == 2000
    assert not LaneTask.objects.filter(state="open").exists()
    assert EffectJob.objects.count() == 2000
    per_checker = Counter(LaneOutcome.objects.values_list("actor_id", flat=True))
    assert sum(per_checker.values()) == 2000 and len(per_checker) > 1


@pytest.mark.parametrize("first", ["confirm", "return"])
def test_a_confirmation_racing_a_return_leaves_exactly_one_outcome(
    checked_queue, alice, carol, settings, first
):
    # They wait on this test's lock (or on each other), never long enough to time out.
    settings.REVIEW_LOCK_TIMEOUT_MS = settings.REVIEW_STATEMENT_TIMEOUT_MS = 60_000
    bulk_checks(checked_queue, alice, 1)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)

    def confirm():
        return confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)

    def give_back():
        return return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="No")

    # Hold the task's row lock so both arrive while it is taken, then let them go together.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM queue_app_lanetask WHERE id = %s FOR UPDATE", [task.pk])
        sessions = [Session(confirm), Session(give_back)]
        if first == "return":
            sessions.reverse()
        # One after the other: a second arrival queues behind the first for the row's lock
        # (pg_blocking_pids then names the first, not us), so each is awaited in its turn.
        sessions[0].start()
        wait_until_blocked_by_me(sessions[0])
        sessions[1].start()
        _wait_until_waiting(sessions[1])  # behind us or behind the first: both are queued
    outcomes = []
    for session in sessions:
        try:
            outcomes.append(session.outcome().result)
        except StaleLease as exc:
            outcomes.append(f"stale: {exc.message}")
    finished = [o for o in outcomes if not o.startswith("stale")]
    assert len(finished) == 1, outcomes
    assert LaneOutcome.objects.filter(task=task).count() == 1
    stored = LaneOutcome.objects.get(task=task).result
    assert stored == finished[0]
    # The first in the lock's queue wins; the second finds the task done and is refused.
    assert stored == ("confirmed" if first == "confirm" else "returned")
    # The effect job exists if and only if the one outcome is a confirmation.
    assert EffectJob.objects.filter(decision_id=task.decision_id).exists() == (
        stored == "confirmed"
    )


@pytest.mark.parametrize("round_", range(3))
def test_confirm_and_return_from_many_threads_on_one_task(checked_queue, alice, carol, round_):
    bulk_checks(checked_queue, alice, 1)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)

    def act(i: int) -> str:
        try:
            if i % 2:
                return confirm_check(
                    task_id=task.pk, user=carol, lease_token=task.lease_token
                ).result
            return return_check(
                task_id=task.pk, user=carol, lease_token=task.lease_token, note="x"
            ).result
        except StaleLease:
            return "stale"

    results = run_in_threads(8, act)
    assert sorted(r for r in results if r != "stale") in (["confirmed"], ["returned"])
    assert LaneOutcome.objects.filter(task=task).count() == 1


@pytest.mark.slow
def test_effect_jobs_exist_exactly_for_confirmed_decisions_and_apply_once(
    checked_queue, alice, reviewers_group, ledger, settings
):
    settings.REVIEW_EFFECTS = {"ledger": "tests.worker.ledger.record"}
    checked_queue.effect = "ledger"
    checked_queue.save(update_fields=["effect"])
    bulk_checks(checked_queue, alice, 300)
    checkers = _checkers(reviewers_group, 6)

    def work(i: int) -> None:
        me = checkers[i]
        n = 0
        while (task := claim_lane_task(queue=checked_queue, kind="check", user=me)) is not None:
            n += 1
            if (task.pk + i) % 3 == 0:
                return_check(task_id=task.pk, user=me, lease_token=task.lease_token, note="No")
            else:
                confirm_check(task_id=task.pk, user=me, lease_token=task.lease_token)

    run_in_threads(6, work)
    confirmed = set(
        LaneOutcome.objects.filter(result="confirmed").values_list("task__decision_id", flat=True)
    )
    returned = set(
        LaneOutcome.objects.filter(result="returned").values_list("task__decision_id", flat=True)
    )
    assert confirmed and returned and len(confirmed) + len(returned) == 300
    assert set(EffectJob.objects.values_list("decision_id", flat=True)) == confirmed

    # Four workers drain the outbox at once, each on its own connection.
    def drain(i: int) -> int:
        total = 0
        while (n := apply_batch()) > 0:
            total += n
        return total

    run_in_threads(4, drain)
    counts = ledger_counts()
    assert set(counts) == confirmed
    assert set(counts.values()) == {1}
    assert not EffectJob.objects.filter(done_at__isnull=True).exists()
