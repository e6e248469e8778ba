"""The decide in one statement (decisions_sql.CLOSE_AND_RECORD_DECISION) and the item's stored hash.

submit_decision sends the whole decide as one statement; when one of its conditions does not
hold it writes nothing, and the row is read afterwards to say which. The stored hash is kept
by every writer of evidence and must never stand for evidence the row no longer holds; an item
without one (from before it was kept) is refused until backfill_evidence_hashes gives it one.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection
from django.utils import timezone

from queue_app.errors import EvidenceChanged, InvalidReason, InvalidVerdict, NotPermitted
from queue_app.evidence import arrival_evidence_hash, evidence_hash, item_evidence_hash
from queue_app.models import Decision, EffectJob, ItemEvent, LaneTask, ReviewItem
from queue_app.models.lane_tasks import CheckPolicy
from queue_app.second_person import qa_sampled
from queue_app.services import claim_next, create_item, replace_evidence, submit_decision
from tests.conftest import make_items, shown_hash


def _decide(queue, reviewer, *, verdict="approve", reason="verified", stored=True, **payload):
    """Create, claim and decide one item; stored=False clears its stored hash first, sees the
    decide refused, and backfills it before deciding again."""
    n = ReviewItem.objects.count()
    item = create_item(
        queue=queue,
        subject=f"case {n}",
        payload=payload or {"amount": "12.50"},
        idempotency_key=f"one-{n}",
        due_at=timezone.now() + timedelta(days=2),
    )[0]
    if not stored:
        ReviewItem.objects.filter(pk=item.pk).update(evidence_hash=None)
    leased = claim_next(queue=queue, reviewer=reviewer)
    assert leased.pk == item.pk
    decide = dict(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=leased.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(leased),
        queue_id=queue.pk,
    )
    if not stored:
        with pytest.raises(EvidenceChanged):
            submit_decision(**decide)
        assert _untouched(leased)
        call_command("backfill_evidence_hashes", stdout=StringIO())
    return submit_decision(**decide)


def _written(decision: Decision) -> dict[str, Any]:
    """Everything a decide wrote, in terms that do not depend on ids or times."""
    item = ReviewItem.objects.get(pk=decision.item_id)
    lane = LaneTask.objects.filter(decision=decision).first()
    [event] = ItemEvent.objects.filter(item_id=item.pk, kind="decided")
    stored = Decision.objects.get(pk=decision.pk)
    return {
        "item": (item.state, item.decided_at is not None, item.lease_token, item.lease_owner_id),
        "decision": (stored.verdict, stored.reason_code.code, stored.note),
        "token_recorded": stored.lease_token is not None,
        "hash_is_the_items": stored.evidence_hash == item_evidence_hash(item),
        "returned": (decision.awaiting_check, decision.reason_code.code),
        "effect_job": EffectJob.objects.filter(decision=decision).exists(),
        "lane": lane and (lane.kind, lane.state, lane.due_at == item.due_at, lane.maker_id),
        "event": {k: v for k, v in event.detail.items() if k != "decision_id"},
    }


@pytest.mark.parametrize(
    ("policies", "verdict", "reason"),
    [
        ([], "approve", "verified"),
        ([], "reject", "fraud"),
        ([], "escalate", "policy_gap"),
        ([{"verdict": "approve"}], "approve", "verified"),  # always checked
        ([{"verdict": "approve"}], "reject", "fraud"),  # another verdict's policy
        ([{"verdict": "reject", "path": "amount", "threshold": "1.00"}], "approve", "verified"),
    ],
)
def test_an_item_without_a_stored_hash_is_refused_then_decides_the_same_once_backfilled(
    queue, alice, explained_refusals, policies, verdict, reason
):
    for policy in policies:
        CheckPolicy.objects.create(queue=queue, **policy)
    fast = _decide(queue, alice, verdict=verdict, reason=reason)
    assert explained_refusals == []
    slow = _decide(queue, alice, verdict=verdict, reason=reason, stored=False)
    assert explained_refusals == [slow.item_id]
    assert _written(fast) == _written(slow)
    assert fast.queue_slug == slow.queue_slug == queue.slug


def test_a_policy_that_reads_the_payload_is_judged_in_the_statement(
    queue, alice, explained_refusals
):
    CheckPolicy.objects.create(
        queue=queue, verdict="approve", path="amount", threshold=Decimal("100.00")
    )
    small = _decide(queue, alice, amount="99.99")
    large = _decide(queue, alice, amount="100.00")
    assert explained_refusals == []
    assert (small.awaiting_check, large.awaiting_check) == (False, True)
    assert ReviewItem.objects.get(pk=large.item_id).state == "awaiting_check"
    assert LaneTask.objects.filter(decision=large, kind="check").exists()
    assert not EffectJob.objects.filter(decision=large).exists()


def test_the_qa_draw_in_sql_is_the_draw_in_python(queue, alice, explained_refusals):
    queue.qa_rate = Decimal("37.50")
    queue.save(update_fields=["qa_rate"])
    decisions = [_decide(queue, alice) for _ in range(40)]
    assert explained_refusals == []
    drawn = {d.pk for d in decisions if LaneTask.objects.filter(decision=d, kind="qa").exists()}
    expected = {
        d.pk
        for d in decisions
        if qa_sampled(
            item_id=d.item_id, lease_token=d.lease_token, verdict="approve", rate_percent="37.50"
        )
    }
    assert drawn == expected
    assert 0 < len(drawn) < 40  # both outcomes occurred, so the comparison means something


def _claimed(queue, reviewer) -> ReviewItem:
    item = make_items(queue, 1, prefix=f"r{ReviewItem.objects.count()}")[0]
    leased = claim_next(queue=queue, reviewer=reviewer)
    assert leased.pk == item.pk and leased.evidence_hash is not None
    return leased


def _submit(item: ReviewItem, reviewer, **overrides: Any) -> Decision:
    fields = {
        "item_id": item.pk,
        "reviewer": reviewer,
        "lease_token": item.lease_token,
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": shown_hash(item),
        "queue_id": item.queue_id,
        **overrides,
    }
    return submit_decision(**fields)


def _untouched(item: ReviewItem) -> bool:
    now = ReviewItem.objects.get(pk=item.pk)
    return (
        (now.state, now.lease_token) == ("leased", item.lease_token)
        and not Decision.objects.filter(item_id=item.pk).exists()
        and not ItemEvent.objects.filter(item_id=item.pk, kind="decided").exists()
    )


def test_each_refusal_writes_nothing_and_is_named_after_the_statement_refused(
    queue, alice, explained_refusals
):
    queue.escalation_queue = None
    queue.save(update_fields=["escalation_queue"])
    item = _claimed(queue, alice)
    with pytest.raises(EvidenceChanged):
        _submit(item, alice, evidence_hash="0" * 64)
    assert _untouched(item)
    with pytest.raises(InvalidReason):
        _submit(item, alice, reason_code="no-such-code")
    assert _untouched(item)
    with pytest.raises(InvalidVerdict):  # no escalation queue to escalate to
        _submit(item, alice, verdict="escalate", reason_code="policy_gap")
    assert _untouched(item)
    alice.groups.clear()
    with pytest.raises(NotPermitted):
        _submit(item, alice)
    assert _untouched(item)
    # The invalid reason failed in the one statement (the database refuses it, nothing more
    # to ask); for the others the statement wrote nothing, and the row said why.
    assert explained_refusals == [item.pk] * 3


def test_replaced_evidence_gets_its_own_stored_hash_and_the_old_form_is_refused(queue, alice):
    item = _claimed(queue, alice)
    replace_evidence(item_id=item.pk, actor=alice, payload={"amount": "13.00"})
    now = ReviewItem.objects.get(pk=item.pk)
    assert now.evidence_hash == item_evidence_hash(now) != item.evidence_hash
    with pytest.raises(EvidenceChanged):
        _submit(item, alice)
    assert _untouched(item)
    # The page reloaded shows the new evidence, and its form is recorded in one statement.
    assert _submit(now, alice, evidence_hash=shown_hash(now)).evidence_hash == now.evidence_hash


@pytest.mark.parametrize(
    ("change", "cleared"),
    [
        ("subject = subject || '!'", True),
        ("payload = jsonb_set(payload, '{amount}', '\"12.51\"')", True),
        ('payload = \'{"n": 0, "amount": 12.5}\'', True),
        ('attachments = \'{"a.pdf": {"sha256": "00", "size": 1}}\'', True),
        ("priority = priority + 1", False),
        ("subject = subject, payload = payload, attachments = attachments", False),
    ],
)
def test_the_stored_hash_is_cleared_by_any_change_to_the_evidence(queue, change, cleared):
    [item] = make_items(queue, 1)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE queue_app_reviewitem SET {change} WHERE id = %s RETURNING evidence_hash",
            [item.pk],
        )
        [(after,)] = cursor.fetchall()
    assert (after is None) is cleared
    if not cleared:
        assert after == item.evidence_hash


def test_numbers_equal_as_jsonb_but_written_differently_clear_it_too(queue):
    # 12.5 and 12.50 are equal jsonb values, but they hash differently.
    item, _ = create_item(
        queue=queue, subject="s", payload={"a": Decimal("12.5")}, idempotency_key="x"
    )
    assert item.evidence_hash is not None
    ReviewItem.objects.filter(pk=item.pk).update(payload={"a": Decimal("12.50")})
    assert ReviewItem.objects.get(pk=item.pk).evidence_hash is None


def test_the_database_refuses_a_stored_hash_that_is_not_a_sha256(queue):
    [item] = make_items(queue, 1)
    with pytest.raises(IntegrityError):
        ReviewItem.objects.filter(pk=item.pk).update(evidence_hash="not a hash")


PAYLOADS = [
    {"amount": Decimal("12.50"), "n": 3, "ok": True, "none": None, "s": "ü €"},
    {"nested": [{"x": Decimal("0.0000001")}, [Decimal("-1.5"), 0]], "big": 10**50},
    {"tiny": Decimal("1.0E-7"), "scaled": Decimal("1.50E+1")},
    # Stored differently from how they were written: no stored hash for these.
    {"integral": Decimal("12")},
    {"exponent": Decimal("1E+2")},
    {"negative_zero": Decimal("-0.0")},
    {"float": 1e16},
    {"huge": 10**2000},
    {"list": [Decimal("1.25"), "x", [], {}], "empty": {}},
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_a_stored_hash_is_the_hash_of_the_row_as_read_back(queue, payload):
    item = create_item(queue=queue, subject="Case ☃", payload=payload, idempotency_key="k")[0]
    stored = ReviewItem.objects.get(pk=item.pk)
    assert stored.evidence_hash == item.evidence_hash == item_evidence_hash(stored)
    expected = arrival_evidence_hash(subject="Case ☃", payload=payload)
    if expected is not None:
        assert expected == stored.evidence_hash


@pytest.mark.parametrize("index", [3, 4, 5, 6])
def test_the_values_left_without_a_stored_hash_do_read_back_differently(queue, index):
    # Why arrival_evidence_hash declines them: the hash of the written value would not be
    # the hash of the row (which is what a form carries), so intake hashes the row read back.
    payload = PAYLOADS[index]
    item = create_item(queue=queue, subject="s", payload=payload, idempotency_key="k")[0]
    read_back = ReviewItem.objects.get(pk=item.pk)
    assert arrival_evidence_hash(subject="s", payload=payload) is None
    assert evidence_hash(subject="s", payload=payload) != item_evidence_hash(read_back)
