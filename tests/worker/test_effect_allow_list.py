"""Effects come from an allow-list, and nothing an effect raises takes the worker down."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from queue_app.apply import apply_one
from queue_app.models import AppliedDecision, EffectJob, Queue
from tests.conftest import make_queue
from tests.worker.conftest import LEDGER_EFFECT, decide, ledger_counts

FAST = ("--poll-interval", "0.1", "--escalate-every", "0")


def _dead_error(decision) -> str:
    job = EffectJob.objects.get(decision=decision)
    assert job.dead and job.done_at is None
    return job.last_error


@pytest.mark.django_db(transaction=True)
def test_a_queue_set_to_sys_exit_outside_the_admin_fails_its_job_and_the_worker_goes_on(
    ledger_queue, alice, reviewers_group, spawn_worker
):
    rogue = make_queue("rogue", group=reviewers_group)
    Queue.objects.filter(pk=rogue.pk).update(effect="sys.exit")  # not through the admin form
    [refused] = decide(Queue.objects.get(pk=rogue.pk), alice, 1, prefix="rogue")
    others = decide(ledger_queue, alice, 3)

    worker = spawn_worker("--once", "--batch-size", "1", *FAST)

    assert worker.wait(timeout=60) == 0, worker.output()
    assert "Effect 'sys.exit' is not allowed" in _dead_error(refused)
    assert ledger_counts() == {d.pk: 1 for d in others}
    assert not AppliedDecision.objects.filter(decision=refused).exists()


@pytest.mark.django_db(transaction=True)
def test_an_effect_raising_system_exit_is_a_failed_attempt_and_the_worker_goes_on(
    ledger_queue, alice, reviewers_group, spawn_worker
):
    exiting = make_queue("exiting", group=reviewers_group, effect="tests.worker.ledger.exits")
    [failed] = decide(exiting, alice, 1, prefix="exiting")
    others = decide(ledger_queue, alice, 3)

    worker = spawn_worker("--once", "--batch-size", "10", *FAST)

    assert worker.wait(timeout=60) == 0, worker.output()
    job = EffectJob.objects.get(decision=failed)
    assert job.attempts == 1 and not job.dead and job.done_at is None
    assert "EffectAborted: The effect raised SystemExit(3)" in job.last_error
    # Its ledger row rolled back with the attempt; the rest of the batch committed.
    assert ledger_counts() == {d.pk: 1 for d in others}


@pytest.mark.django_db(transaction=True)
def test_it_runs_an_effect_the_deployment_registers_through_the_environment(
    ledger_queue, alice, spawn_worker, worker_env
):
    Queue.objects.filter(pk=ledger_queue.pk).update(effect="unblock_account")
    decisions = decide(Queue.objects.get(pk=ledger_queue.pk), alice, 2)

    env = worker_env(REVIEW_EFFECTS=f"unblock_account={LEDGER_EFFECT}")
    worker = spawn_worker("--once", *FAST, env=env)

    assert worker.wait(timeout=60) == 0, worker.output()
    assert ledger_counts() == {d.pk: 1 for d in decisions}


@pytest.mark.django_db
def test_an_effect_raising_keyboard_interrupt_is_recorded_not_raised(queue, alice):
    queue.effect = "tests.worker.ledger.interrupts"
    queue.save()
    [decision] = decide(queue, alice, 1)

    assert apply_one() is True  # nothing escaped

    job = EffectJob.objects.get(decision=decision)
    assert job.attempts == 1 and job.done_at is None
    assert "EffectAborted: The effect raised KeyboardInterrupt" in job.last_error


@pytest.mark.django_db
def test_the_worker_refuses_to_start_when_an_effect_takes_a_built_in_name(settings):
    settings.REVIEW_EFFECTS = {"log": "tests.worker.ledger.record"}

    with pytest.raises(CommandError, match="REVIEW_EFFECTS registers 'log'"):
        call_command("run_apply_worker", "--once")
