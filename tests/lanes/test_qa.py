"""Blind QA sampling: the draw, the review, agreement, and adjudication of disagreements."""

from __future__ import annotations

import math
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from queue_app.errors import NotPermitted
from queue_app.models import Decision, EffectJob, LaneTask, ReviewItem
from queue_app.second_person import draw_samples, qa_draw, qa_sampled
from queue_app.selectors.agreement import agreement_by_queue, agreement_by_reviewer
from queue_app.services import (
    adjudicate,
    claim_lane_task,
    record_qa_review,
    standing_outcome,
)
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db

DRAWS = 10_000


def _token(i: int) -> uuid.UUID:
    # Lease tokens are random UUIDs; fixed ones keep the test reproducible.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"lease-{i}")


@pytest.mark.parametrize("rate", [Decimal("1"), Decimal("10"), Decimal("33.33"), Decimal("50")])
def test_the_draw_samples_the_rate_over_10000_decisions(rate):
    hits = sum(
        qa_sampled(item_id=i, lease_token=_token(i), verdict="approve", rate_percent=rate)
        for i in range(1, DRAWS + 1)
    )
    p = float(rate) / 100
    sd = math.sqrt(DRAWS * p * (1 - p))
    # Binomial(10,000, p): outside 5 standard deviations has probability below 1e-6.
    assert abs(hits - DRAWS * p) < 5 * sd, (hits, DRAWS * p, sd)


def test_the_draw_is_uniform_across_deciles():
    counts = [0] * 10
    for i in range(1, DRAWS + 1):
        counts[qa_draw(item_id=i, lease_token=_token(i)) * 10 // 2**64] += 1
    # Pearson's chi-squared with 9 degrees of freedom; 27.88 is its 0.999 quantile.
    chi2 = sum((c - DRAWS / 10) ** 2 / (DRAWS / 10) for c in counts)
    assert chi2 < 27.88, counts


def test_the_draw_is_reproducible_and_keyed_by_the_secret(settings):
    first = qa_draw(item_id=7, lease_token=_token(7))
    assert qa_draw(item_id=7, lease_token=str(_token(7))) == first
    settings.SECRET_KEY = "another-secret-" + "x" * 40
    assert qa_draw(item_id=7, lease_token=_token(7)) != first


def test_the_bounds_of_the_rate_are_exact():
    assert not draw_samples(0, 0)
    assert draw_samples(0, Decimal("0.01"))
    assert draw_samples(2**64 - 1, 100)
    assert not draw_samples(2**64 // 2, 50)  # exactly one half is not below one half
    assert draw_samples(2**64 // 2 - 1, 50)


def test_escalations_are_never_drawn():
    assert not any(
        qa_sampled(item_id=i, lease_token=_token(i), verdict="escalate", rate_percent=100)
        for i in range(100)
    )


def _qa_queue(queue, rate=100):
    queue.qa_rate = rate
    queue.save(update_fields=["qa_rate"])
    return queue


def test_a_sampled_decision_takes_effect_at_once_and_waits_in_the_qa_lane(queue, alice):
    decision = decide_one(_qa_queue(queue), alice)
    assert EffectJob.objects.filter(decision=decision).exists()  # QA never delays the effect
    task = LaneTask.objects.get(decision=decision)
    assert task.kind == "qa"
    assert ReviewItem.objects.get(pk=decision.item_id).state == "decided"


def test_at_rate_zero_nothing_is_drawn(queue, alice):
    decide_one(_qa_queue(queue, 0), alice)
    assert not LaneTask.objects.exists()


def test_the_original_reviewer_never_gets_the_qa(queue, alice):
    decide_one(_qa_queue(queue), alice)
    assert claim_lane_task(queue=queue, kind="qa", user=alice) is None


def _review(queue, qa_user, verdict, reason):
    task = claim_lane_task(queue=queue, kind="qa", user=qa_user)
    return record_qa_review(
        task_id=task.pk,
        user=qa_user,
        lease_token=task.lease_token,
        verdict=verdict,
        reason_code=reason,
    )


def test_an_agreeing_review_opens_no_adjudication(queue, alice, carol):
    decide_one(_qa_queue(queue), alice)
    outcome = _review(queue, carol, "approve", "within_tolerance")
    assert (outcome.agrees_verdict, outcome.agrees_reason) == (True, False)
    assert not LaneTask.objects.filter(kind="adjudication").exists()


def test_a_disagreement_ends_in_an_overturn_by_an_adjudicator(queue, alice, carol, adjudicator):
    decision = decide_one(_qa_queue(queue), alice)
    outcome = _review(queue, carol, "reject", "fraud")
    assert outcome.agrees_verdict is False
    adj = LaneTask.objects.get(kind="adjudication")
    assert (adj.second_id, adj.source_id) == (carol.pk, outcome.task_id)
    # The QA reviewer may not settle their own disagreement.
    assert claim_lane_task(queue=queue, kind="adjudication", user=adjudicator) is not None
    task = LaneTask.objects.get(kind="adjudication")
    done = adjudicate(
        task_id=task.pk,
        user=adjudicator,
        lease_token=task.lease_token,
        uphold=False,
        reason_code="reviewer_error",
        note="QA is right: the document is forged",
    )
    assert done.result == "overturned"
    overturn = Decision.objects.get(pk=done.overturn_id)
    assert (overturn.supersedes_id, overturn.corrected_verdict) == (decision.pk, "reject")
    assert standing_outcome(item=decision.item_id) == "reject"
    assert EffectJob.objects.filter(decision=overturn).exists()


def test_upholding_changes_nothing(queue, alice, carol, adjudicator):
    decision = decide_one(_qa_queue(queue), alice)
    _review(queue, carol, "reject", "fraud")
    task = claim_lane_task(queue=queue, kind="adjudication", user=adjudicator)
    done = adjudicate(task_id=task.pk, user=adjudicator, lease_token=task.lease_token, uphold=True)
    assert done.result == "upheld"
    assert standing_outcome(item=decision.item_id) == "approve"


def test_adjudication_needs_can_overturn(queue, alice, carol, bob):
    decide_one(_qa_queue(queue), alice)
    _review(queue, carol, "reject", "fraud")
    with pytest.raises(NotPermitted):
        claim_lane_task(queue=queue, kind="adjudication", user=bob)


def test_the_qa_reviewer_is_barred_from_adjudicating(queue, alice, adjudicator, carol):
    decide_one(_qa_queue(queue), alice)
    _review(queue, adjudicator, "reject", "fraud")
    assert claim_lane_task(queue=queue, kind="adjudication", user=adjudicator) is None


def test_agreement_per_queue_and_reviewer(queue, alice, bob, carol):
    _qa_queue(queue)
    for maker, verdict in [(alice, "approve"), (alice, "approve"), (bob, "approve")]:
        decide_one(queue, maker, verdict=verdict)
    decide_one(queue, bob, verdict="reject", reason="fraud")
    # carol reviews all four: agrees on three verdicts, one reason differs.
    answers = {
        ("alice", 0): ("approve", "verified"),
        ("alice", 1): ("reject", "fraud"),
        ("bob", 0): ("approve", "within_tolerance"),
        ("bob", 1): ("reject", "fraud"),
    }
    seen: dict[str, int] = {}
    while (task := claim_lane_task(queue=queue, kind="qa", user=carol)) is not None:
        who = task.decision.reviewer.username
        verdict, reason = answers[(who, seen.get(who, 0))]
        seen[who] = seen.get(who, 0) + 1
        record_qa_review(
            task_id=task.pk,
            user=carol,
            lease_token=task.lease_token,
            verdict=verdict,
            reason_code=reason,
        )
    [row] = agreement_by_queue(window=timedelta(days=1))
    a = row["agreement"]
    assert (a.verdict.hits, a.verdict.n, a.reason.hits) == (3, 4, 2)
    # Table: approve/approve 2, approve/reject 1, reject/reject 1 -> p_o = .75,
    # p_e = (3*2 + 1*2)/16 = .5, kappa = .5.
    assert a.kappa == pytest.approx(0.5)
    low, high = a.verdict.interval
    assert low < 0.75 < high
    by_reviewer = {r["reviewer"]: r["agreement"] for r in agreement_by_reviewer()}
    assert (by_reviewer["alice"].verdict.hits, by_reviewer["alice"].verdict.n) == (1, 2)
    assert (by_reviewer["bob"].verdict.hits, by_reviewer["bob"].verdict.n) == (2, 2)
