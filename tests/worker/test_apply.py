"""apply_batch: one decision's proof, effect and done mark commit together, or none of them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F

from queue_app import effects
from queue_app.apply import RetryPolicy, apply_batch, apply_one
from queue_app.errors import InvalidBounds, PermanentEffectError
from queue_app.models import AppliedDecision, EffectJob, Verdict
from queue_app.services import overturn_decision
from tests.conftest import make_queue
from tests.worker.conftest import LEDGER_EFFECT, decide, ledger_counts

pytestmark = pytest.mark.django_db


def test_it_applies_a_decision_once_and_marks_its_job_done(ledger_queue, alice):
    [decision] = decide(ledger_queue, alice, 1)

    assert apply_one() is True
    assert apply_one() is False

    job = EffectJob.objects.get(decision=decision)
    assert job.done_at is not None and job.attempts == 1 and not job.dead
    applied = AppliedDecision.objects.get(decision=decision)
    assert applied.outcome == {"effect": LEDGER_EFFECT, "standing_verdict": "approve"}
    assert ledger_counts() == {decision.pk: 1}


def test_it_applies_with_the_log_effect_by_default(queue, alice, caplog):
    [decision] = decide(queue, alice, 1)

    with caplog.at_level("INFO", logger="queue_app.apply"):
        assert apply_batch(batch_size=10) == 1

    logged = [r for r in caplog.records if r.getMessage() == "decision effect: log"]
    assert len(logged) == 1
    assert logged[0].decision_id == decision.pk
    assert logged[0].item_id == decision.item_id
    assert logged[0].queue == "kyc"
    assert logged[0].trace_id == str(decision.item.trace_id)
    assert AppliedDecision.objects.filter(decision=decision).exists()


def test_it_drains_in_batches_of_the_given_size(ledger_queue, alice):
    decisions = decide(ledger_queue, alice, 7)

    assert apply_batch(batch_size=3) == 3
    assert apply_batch(batch_size=3) == 3
    assert apply_batch(batch_size=3) == 1
    assert apply_batch(batch_size=3) == 0

    assert ledger_counts() == {d.pk: 1 for d in decisions}


def test_it_finishes_the_bookkeeping_without_rerunning_an_applied_decision(ledger_queue, alice):
    [decision] = decide(ledger_queue, alice, 1)
    assert apply_one()
    # A done mark lost after the effect committed (it cannot be, in one transaction; be robust).
    EffectJob.objects.filter(decision=decision).update(done_at=None)

    assert apply_one() is True

    assert ledger_counts() == {decision.pk: 1}
    assert EffectJob.objects.get(decision=decision).done_at is not None
    assert AppliedDecision.objects.filter(decision=decision).count() == 1


def test_a_failing_effect_rolls_back_its_writes_and_is_retried_later(ledger_queue, alice):
    ledger_queue.effect = "tests.worker.ledger.failing"
    ledger_queue.save()
    [decision] = decide(ledger_queue, alice, 1)

    assert apply_one() is True

    job = EffectJob.objects.get(decision=decision)
    assert job.attempts == 1 and not job.dead and job.done_at is None
    assert "RuntimeError: ledger unavailable" in job.last_error
    assert ledger_counts() == {}
    assert not AppliedDecision.objects.filter(decision=decision).exists()
    # Not due again until its backoff has passed.
    assert apply_one() is False


def test_one_failing_decision_does_not_undo_the_others_in_its_batch(
    ledger_queue, alice, reviewers_group
):
    broken = make_queue("broken", group=reviewers_group, effect="tests.worker.ledger.failing")
    [bad] = decide(broken, alice, 1, prefix="bad")
    good = decide(ledger_queue, alice, 3)

    assert apply_batch(batch_size=10) == 4

    assert ledger_counts() == {d.pk: 1 for d in good}
    assert set(AppliedDecision.objects.values_list("decision_id", flat=True)) == {
        d.pk for d in good
    }
    job = EffectJob.objects.get(decision=bad)
    assert job.attempts == 1 and job.done_at is None and not job.dead


def test_an_unknown_effect_goes_dead_at_once_with_a_clear_error(queue, alice):
    queue.effect = "no_such_effect"
    queue.save()
    [decision] = decide(queue, alice, 1)

    assert apply_one() is True

    job = EffectJob.objects.get(decision=decision)
    assert job.dead and job.attempts == 1
    assert "Effect 'no_such_effect' is not allowed" in job.last_error
    assert apply_one() is False


def test_it_goes_dead_after_the_maximum_attempts(ledger_queue, alice):
    ledger_queue.effect = "tests.worker.ledger.failing"
    ledger_queue.save()
    [decision] = decide(ledger_queue, alice, 1)
    policy = RetryPolicy(max_attempts=3, backoff_base=0.01)

    for _ in range(3):
        assert apply_one(policy=policy)
        EffectJob.objects.update(next_attempt_at=F("next_attempt_at") - timedelta(hours=1))

    job = EffectJob.objects.get(decision=decision)
    assert job.dead and job.attempts == 3 and job.done_at is None
    assert apply_one(policy=policy) is False


def test_retry_delays_grow_and_stay_jittered():
    policy = RetryPolicy(backoff_base=1.0, backoff_cap=3600.0)
    for failures in range(1, 10):
        low, high = 2 ** (failures - 1) * 0.5, 2 ** (failures - 1)
        assert low <= policy.delay(failures).total_seconds() <= high
    assert policy.delay(40).total_seconds() <= 3600.0


def test_it_rejects_a_batch_size_out_of_bounds():
    with pytest.raises(InvalidBounds):
        apply_batch(batch_size=0)
    with pytest.raises(InvalidBounds):
        apply_batch(batch_size=501)


def test_it_rejects_a_retry_policy_out_of_bounds():
    with pytest.raises(InvalidBounds):
        RetryPolicy(max_attempts=0)
    with pytest.raises(InvalidBounds):
        RetryPolicy(backoff_base=0)


def test_an_overturn_is_applied_with_supersedes_and_corrected_verdict(queue, alice, supervisor):
    [original] = decide(queue, alice, 1)
    assert apply_one()
    overturn = overturn_decision(
        decision_id=original.pk,
        admin=supervisor,
        corrected_verdict=Verdict.REJECT,
        reason_code="reviewer_error",
    )

    assert apply_one()

    applied = AppliedDecision.objects.get(decision=overturn)
    assert applied.outcome == {"effect": "log", "standing_verdict": "reject"}
    event = effects.decision_event(overturn)
    assert event["verdict"] == "overturn"
    assert event["supersedes"] == original.pk
    assert event["corrected_verdict"] == "reject"
    assert event["standing_verdict"] == "reject"
    # The decision's ordinal within its item, so receivers can order what they get.
    assert event["item_sequence"] == 2
    assert effects.decision_event(original)["item_sequence"] == 1


def test_it_resolves_a_dotted_path_to_a_callable():
    from tests.worker import ledger

    assert effects.resolve(LEDGER_EFFECT) is ledger.record
    assert effects.resolve("log") is effects.log


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("table", "is not callable"),
        ("missing", "cannot be imported"),
        ("webhooks", "is not allowed"),
        ("sys.exit", "is not allowed"),
        ("os.system", "is not allowed"),
    ],
)
def test_it_refuses_an_effect_it_cannot_run(name, words, settings):
    settings.REVIEW_EFFECTS = {
        "table": "tests.worker.ledger.LEDGER_TABLE",
        "missing": "tests.worker.no_such_module.record",
    }
    with pytest.raises(PermanentEffectError, match=words):
        effects.resolve(name)
