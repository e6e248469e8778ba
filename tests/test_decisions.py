"""submit_decision: the fenced close, the evidence check, one transaction."""

from __future__ import annotations

import pytest
from django.db import connection

from queue_app.errors import EvidenceChanged, InvalidReason, InvalidVerdict, StaleLease
from queue_app.models import Decision, EffectJob, ItemEvent, ReviewItem
from queue_app.services import claim_next, release_lease, submit_decision
from tests.conftest import backdate_lease, make_items, make_queue, shown_hash

pytestmark = pytest.mark.django_db


def _decide(item, reviewer, **overrides):
    fields = dict(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
    )
    fields.update(overrides)
    return submit_decision(**fields)


def test_it_records_decision_outbox_and_event_together(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    decision = _decide(item, alice, note="looks fine")
    row = ReviewItem.objects.get(pk=item.pk)
    assert row.state == "decided" and row.decided_at is not None and row.lease_token is None
    assert decision.reviewer_id == alice.pk
    assert decision.lease_token == item.lease_token
    assert decision.evidence_hash == shown_hash(item)
    assert decision.reason_code.code == "verified"
    assert EffectJob.objects.filter(decision=decision, done_at__isnull=True).count() == 1
    assert ItemEvent.objects.filter(item=row, kind="decided").count() == 1


def test_the_decision_comes_back_with_its_reason_code(queue, alice, django_assert_num_queries):
    # INSERT_DECISION returns the reason beside the decision: naming it costs no query.
    make_items(queue, 1)
    decision = _decide(claim_next(queue=queue, reviewer=alice), alice)
    with django_assert_num_queries(0):
        assert (decision.reason_code.code, decision.reason_code.label) == ("verified", "verified")
    assert decision.reason_code == Decision.objects.get().reason_code
    assert decision.reason_code_id == decision.reason_code.pk


def test_it_rejects_stale_token_after_expiry_and_reclaim(queue, alice, bob):
    make_items(queue, 1)
    stale = claim_next(queue=queue, reviewer=alice)
    backdate_lease(stale.pk)
    fresh = claim_next(queue=queue, reviewer=bob)
    assert fresh.pk == stale.pk
    with pytest.raises(StaleLease):
        _decide(stale, alice)
    assert Decision.objects.count() == 0
    assert ReviewItem.objects.get(pk=stale.pk).lease_owner_id == bob.pk
    _decide(fresh, bob)
    assert Decision.objects.get().reviewer_id == bob.pk


def test_it_accepts_a_late_submit_whose_token_still_matches(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    backdate_lease(item.pk)  # expired, but nobody took it
    decision = _decide(item, alice)
    assert decision.item_id == item.pk


def test_it_rejects_submit_after_release(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    release_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)
    with pytest.raises(StaleLease):
        _decide(item, alice)
    assert Decision.objects.count() == 0
    assert ReviewItem.objects.get(pk=item.pk).state == "pending"


def test_it_rejects_a_second_submit_on_the_same_token(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    _decide(item, alice)
    with pytest.raises(StaleLease):
        _decide(item, alice, verdict="reject", reason_code="fraud")
    assert Decision.objects.count() == 1


def test_it_rejects_another_reviewers_use_of_a_token(queue, alice, bob):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(StaleLease):
        _decide(item, bob)
    assert ReviewItem.objects.get(pk=item.pk).state == "leased"


def test_changed_evidence_is_refused_and_writes_nothing(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    shown = shown_hash(item)
    with connection.cursor() as cursor:
        cursor.execute(
            'UPDATE queue_app_reviewitem SET payload = payload || \'{"amount": "99.00"}\' '
            "WHERE id = %s",
            [item.pk],
        )
    with pytest.raises(EvidenceChanged):
        _decide(item, alice, evidence_hash=shown)
    row = ReviewItem.objects.get(pk=item.pk)
    assert row.state == "leased" and row.lease_token == item.lease_token
    assert Decision.objects.count() == 0
    assert EffectJob.objects.count() == 0
    assert not ItemEvent.objects.filter(kind="decided").exists()


def test_a_reason_from_another_verdict_is_refused(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(InvalidReason):
        _decide(item, alice, verdict="approve", reason_code="fraud")
    assert ReviewItem.objects.get(pk=item.pk).state == "leased"


def test_a_retired_reason_is_refused(queue, alice):
    from django.utils import timezone

    queue.reason_codes.filter(code="verified").update(retired_at=timezone.now())
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(InvalidReason):
        _decide(item, alice)


def test_overturn_is_not_a_reviewer_verdict(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(InvalidVerdict):
        _decide(item, alice, verdict="overturn", reason_code="reviewer_error")


def test_escalate_needs_an_escalation_queue(reviewers_group, alice):
    lone = make_queue("lone", group=reviewers_group)
    make_items(lone, 1)
    item = claim_next(queue=lone, reviewer=alice)
    with pytest.raises(InvalidVerdict):
        _decide(item, alice, verdict="escalate", reason_code="policy_gap")


def test_an_operator_retry_revives_only_a_dead_job(queue, alice, retrier):
    from queue_app.services import retry_effect_jobs

    make_items(queue, 1)
    decision = _decide(claim_next(queue=queue, reviewer=alice), alice)
    assert retry_effect_jobs(decision_ids=[decision.pk], operator=retrier) == 0
    EffectJob.objects.filter(pk=decision.pk).update(dead=True, attempts=8, last_error="boom")
    assert retry_effect_jobs(decision_ids=[decision.pk], operator=retrier) == 1
    job = EffectJob.objects.get(pk=decision.pk)
    assert (job.dead, job.attempts) == (False, 0)


# -- the token alone fences: the same reviewer, a newer lease -------------------------------------
# Every other stale-token test also changes the owner, so the owner check alone would pass them.


def _reclaimed_by_myself(queue, reviewer):
    """Claim, let the lease lapse, claim again (a second tab): return (old, new) leases."""
    old = claim_next(queue=queue, reviewer=reviewer)
    backdate_lease(old.pk)
    new = claim_next(queue=queue, reviewer=reviewer)
    assert (new.pk, new.lease_owner_id) == (old.pk, reviewer.pk)
    assert new.lease_token != old.lease_token
    return old, new


def test_it_rejects_my_own_old_token_after_i_reclaimed_the_item(queue, alice):
    make_items(queue, 1)
    old, new = _reclaimed_by_myself(queue, alice)
    with pytest.raises(StaleLease):
        _decide(old, alice)
    assert Decision.objects.count() == 0
    row = ReviewItem.objects.get(pk=old.pk)
    assert (row.state, row.lease_token) == ("leased", new.lease_token)
    assert _decide(new, alice).lease_token == new.lease_token


def test_it_rejects_a_foreign_token_on_an_item_i_hold(queue, alice):
    import uuid

    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(StaleLease):
        _decide(item, alice, lease_token=uuid.uuid4())
    assert Decision.objects.count() == 0
    assert ReviewItem.objects.get(pk=item.pk).lease_token == item.lease_token


def test_a_worker_cannot_decide_one_of_its_items_with_the_token_of_another(queue, alice):
    from datetime import timedelta

    from queue_app.services import claim_batch

    make_items(queue, 2)
    first, second = claim_batch(queue=queue, worker=alice, n=2, ttl=timedelta(minutes=1))
    with pytest.raises(StaleLease):
        _decide(first, alice, lease_token=second.lease_token)
    assert Decision.objects.count() == 0
    assert set(ReviewItem.objects.values_list("state", flat=True)) == {"leased"}
