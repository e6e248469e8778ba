"""Effects of one item are carried out in decision order; superseded ones are not run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from queue_app.apply import apply_one
from queue_app.models import AppliedDecision, EffectJob, Verdict
from queue_app.services import overturn_decision, retry_effect_jobs
from tests.worker import ledger
from tests.worker.conftest import decide

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_flaky_memory():
    ledger.FAILED_ONCE.clear()
    yield
    ledger.FAILED_ONCE.clear()


def drain() -> int:
    """Apply until nothing is due; return how many jobs were attempted."""
    attempted = 0
    while apply_one():
        attempted += 1
    return attempted


def make_due(*decisions) -> None:
    """Bring the decisions' backoff to an end now (as if the wait had passed)."""
    EffectJob.objects.filter(decision__in=decisions).update(
        next_attempt_at=F("next_attempt_at") - timedelta(days=1)
    )


def overturn(decision, supervisor, corrected: str = Verdict.APPROVE):
    return overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict=corrected,
        reason_code="reviewer_error",
    )


def test_an_overturn_waits_for_an_original_backing_off_which_is_then_not_run(
    ledger_queue, alice, supervisor
):
    # The reported sequence: the original's effect fails once and backs off; an admin
    # overturns meanwhile; the worker keeps running.
    ledger_queue.effect = "tests.worker.ledger.flaky"
    ledger_queue.save()
    [original] = decide(ledger_queue, alice, 1, verdict=Verdict.REJECT)
    assert apply_one()
    assert EffectJob.objects.get(decision=original).attempts == 1
    corrected = overturn(original, supervisor)
    ledger.FAILED_ONCE.add(corrected.pk)  # the receiver is back by now

    # The overturn is due, but the original before it is not done: nothing runs.
    drain()
    assert ledger.calls() == []
    assert EffectJob.objects.get(decision=corrected).done_at is None

    make_due(original)
    drain()

    # Only the standing verdict reached the receiver; the original was never sent afterwards.
    assert ledger.calls() == [corrected.pk]
    skipped = AppliedDecision.objects.get(decision=original)
    assert skipped.status == "superseded"
    assert skipped.outcome["superseded_by"] == corrected.pk
    applied = AppliedDecision.objects.get(decision=corrected)
    assert applied.status == "applied"
    assert applied.outcome["standing_verdict"] == "approve"
    assert skipped.applied_at < applied.applied_at
    assert EffectJob.objects.filter(done_at__isnull=True).count() == 0


def test_a_decision_overturned_before_its_effect_ran_is_recorded_superseded(
    ledger_queue, alice, supervisor
):
    [original] = decide(ledger_queue, alice, 1, verdict=Verdict.REJECT)
    first = overturn(original, supervisor, Verdict.APPROVE)

    assert drain() == 2

    assert ledger.calls() == [first.pk]
    assert AppliedDecision.objects.get(decision=original).status == "superseded"
    assert AppliedDecision.objects.get(decision=first).status == "applied"


def test_an_overturn_of_an_applied_decision_runs_after_it(ledger_queue, alice, supervisor):
    [original] = decide(ledger_queue, alice, 1, verdict=Verdict.REJECT)
    assert drain() == 1
    corrected = overturn(original, supervisor)

    assert drain() == 1

    assert ledger.calls() == [original.pk, corrected.pk]
    assert set(AppliedDecision.objects.values_list("status", flat=True)) == {"applied"}


def test_a_dead_job_blocks_the_later_effects_of_its_item_until_an_operator_retries(
    ledger_queue, alice, supervisor, retrier
):
    ledger_queue.effect = "tests.worker.ledger.flaky"
    ledger_queue.save()
    [original, other] = decide(ledger_queue, alice, 2, verdict=Verdict.REJECT)
    ledger.FAILED_ONCE.add(other.pk)  # the other item's receiver is up
    assert apply_one() and apply_one()
    EffectJob.objects.filter(decision=original).update(dead=True)  # as after its last retry
    corrected = overturn(original, supervisor)

    drain()

    # The other item is not held up; the overturn waits behind the dead original.
    assert ledger.calls() == [other.pk]
    job = EffectJob.objects.get(decision=corrected)
    assert job.done_at is None and job.attempts == 0 and not job.dead

    ledger.FAILED_ONCE.add(corrected.pk)
    assert retry_effect_jobs(decision_ids=[original.pk], operator=retrier)
    make_due(original)  # the retry is due at statement time; this test is one transaction
    drain()

    assert ledger.calls() == [other.pk, corrected.pk]
    assert AppliedDecision.objects.get(decision=original).status == "superseded"


def test_a_chain_of_overturns_runs_only_the_standing_one(ledger_queue, alice, supervisor):
    tess = User.objects.create_user(username="tess", is_staff=True)
    tess.user_permissions.add(Permission.objects.get(codename="can_overturn"))
    [original] = decide(ledger_queue, alice, 1, verdict=Verdict.REJECT)
    first = overturn(original, supervisor, Verdict.APPROVE)
    second = overturn(first, User.objects.get(pk=tess.pk), Verdict.REJECT)

    assert drain() == 3

    assert ledger.calls() == [second.pk]
    statuses = dict(AppliedDecision.objects.values_list("decision_id", "status"))
    assert statuses == {original.pk: "superseded", first.pk: "superseded", second.pk: "applied"}


def test_the_database_refuses_an_applied_status_it_does_not_know(ledger_queue, alice):
    [decision] = decide(ledger_queue, alice, 1)

    with (
        pytest.raises(IntegrityError, match="applieddecision_status_valid"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "INSERT INTO queue_app_applieddecision (decision_id, applied_at, outcome, status)"
            " VALUES (%s, now(), '{}', 'skipped')",
            [decision.pk],
        )
