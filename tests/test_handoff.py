"""Escalation is a hand-off to a second person.

Nobody who decided in an item's chain of escalations, and nobody who abandoned an item before
it was moved, may lease or decide the escalation: the claim passes it over for them, and the
database refuses a lease or a decision by them (its hand-off triggers), tested here with raw SQL.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import IntegrityError, connection, transaction

from queue_app.apply import apply_batch
from queue_app.errors import NotPermitted
from queue_app.models import Decision, ItemEvent, ReviewItem
from queue_app.services import (
    claim_next,
    escalate_abandoned,
    item_handoff,
    overturn_decision,
    submit_decision,
)
from tests.conftest import _user, backdate_lease, make_items, make_queue, run_in_threads, shown_hash

pytestmark = pytest.mark.django_db

NOTE = "Signature does not match the one on file; needs a second look."


def _decide(queue, reviewer, verdict="approve", reason="verified", note=""):
    """Claim the next item of the queue as reviewer and decide it; return the decision."""
    lease = claim_next(queue=queue, reviewer=reviewer)
    assert lease is not None, f"{reviewer.username} got nothing in {queue.slug}"
    return submit_decision(
        item_id=lease.pk,
        reviewer=reviewer,
        lease_token=lease.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(lease),
        note=note,
    )


def _escalate(queue, reviewer, note=NOTE):
    """Escalate the next item of the queue and open its escalation (the apply worker's part)."""
    decision = _decide(queue, reviewer, "escalate", "policy_gap", note)
    while apply_batch(batch_size=10):
        pass
    return decision, ReviewItem.objects.get(escalated_by_decision=decision)


def test_who_escalated_cannot_take_the_escalation_and_a_colleague_can(queue, alice, bob):
    make_items(queue, 1)
    _, opened = _escalate(queue, alice)
    assert opened.excluded_reviewer_ids == [alice.pk]
    escalation = opened.queue

    assert claim_next(queue=escalation, reviewer=alice) is None
    lease = claim_next(queue=escalation, reviewer=bob)
    assert lease.pk == opened.pk


def test_the_whole_chain_of_deciders_is_barred(queue, alice, bob, reviewers_group):
    senior = make_queue("senior", group=reviewers_group)
    escalation = queue.escalation_queue
    escalation.escalation_queue = senior
    escalation.save()
    carol = _user("carol", reviewers_group)
    make_items(queue, 1)

    _, first = _escalate(queue, alice)
    _, second = _escalate(escalation, bob)
    assert second.escalated_from_id == first.pk
    assert sorted(second.excluded_reviewer_ids) == sorted([alice.pk, bob.pk])
    assert claim_next(queue=senior, reviewer=alice) is None
    assert claim_next(queue=senior, reviewer=bob) is None
    assert claim_next(queue=senior, reviewer=carol).pk == second.pk


def test_abandoners_are_barred_from_the_moved_item(queue, alice, bob):
    item = make_items(queue, 1)[0]
    for _ in range(queue.escalation_threshold):
        lease = claim_next(queue=queue, reviewer=alice)
        backdate_lease(lease.pk)
    assert escalate_abandoned() == 1
    moved = ReviewItem.objects.get(pk=item.pk)
    assert moved.excluded_reviewer_ids == [alice.pk]
    event = ItemEvent.objects.get(item=moved, kind="auto_escalated")
    assert event.detail["abandoned_by"] == [alice.pk]

    assert claim_next(queue=moved.queue, reviewer=alice) is None
    assert claim_next(queue=moved.queue, reviewer=bob).pk == item.pk


def test_an_abandoned_escalation_keeps_its_deciders_barred(queue, alice, bob, reviewers_group):
    # Escalated by alice, then abandoned by bob in the escalation queue and moved on: both stay
    # barred (the list only grows), carol takes it.
    senior = make_queue("senior", group=reviewers_group)
    escalation = queue.escalation_queue
    escalation.escalation_queue = senior
    escalation.escalation_threshold = 1
    escalation.save()
    carol = _user("carol", reviewers_group)
    make_items(queue, 1)
    _, opened = _escalate(queue, alice)
    lease = claim_next(queue=escalation, reviewer=bob)
    backdate_lease(lease.pk)
    assert escalate_abandoned() == 1
    assert sorted(ReviewItem.objects.get(pk=opened.pk).excluded_reviewer_ids) == sorted(
        [alice.pk, bob.pk]
    )
    assert claim_next(queue=senior, reviewer=bob) is None
    assert claim_next(queue=senior, reviewer=alice) is None
    assert claim_next(queue=senior, reviewer=carol).pk == opened.pk


# -- the database's rules, written around the services ------------------------------------------


def _raw(sql: str, params: list) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_the_database_refuses_a_lease_by_an_excluded_reviewer(queue, alice, bob):
    make_items(queue, 1)
    _, opened = _escalate(queue, alice)
    lease = (
        "UPDATE queue_app_reviewitem SET state = 'leased', lease_owner_id = %s, "
        "lease_token = %s, lease_expires = now() + interval '5 minutes', "
        "lease_count = lease_count + 1 WHERE id = %s"
    )
    with pytest.raises(IntegrityError, match="hand-off: reviewer"):
        _raw(lease, [alice.pk, uuid.uuid4(), opened.pk])
    _raw(lease, [bob.pk, uuid.uuid4(), opened.pk])  # a colleague may
    assert ReviewItem.objects.get(pk=opened.pk).lease_owner_id == bob.pk


def test_the_database_refuses_a_decision_by_an_excluded_reviewer(queue, alice, bob):
    make_items(queue, 1)
    _, opened = _escalate(queue, alice)
    lease = claim_next(queue=opened.queue, reviewer=bob)
    reason = opened.queue.reason_codes.get(verdict="approve", code="verified").pk
    insert = (
        "INSERT INTO queue_app_decision (item_id, queue_id, reviewer_id, verdict, "
        "reason_code_id, evidence_hash, note, lease_token, created_at, chain_hash) "
        "VALUES (%s, %s, %s, 'approve', %s, %s, '', %s, now(), '')"
    )
    params = [opened.pk, opened.queue_id, alice.pk, reason, shown_hash(lease), lease.lease_token]
    with pytest.raises(IntegrityError, match="hand-off: reviewer"):
        _raw(insert, params)
    assert not Decision.objects.filter(item=opened).exists()


def test_the_database_refuses_shrinking_the_list(queue, alice):
    make_items(queue, 1)
    _, opened = _escalate(queue, alice)
    with pytest.raises(IntegrityError, match="can only be added to"):
        _raw(
            "UPDATE queue_app_reviewitem SET excluded_reviewer_ids = '{}' WHERE id = %s",
            [opened.pk],
        )


def test_an_insert_cannot_plant_an_empty_list_on_an_escalation(queue, alice, bob):
    # Whatever the writer sends, the insert trigger adds the origin's deciders. (A second item
    # from the same origin, keyed, since the escalate verdict already has its one item.)
    make_items(queue, 1)
    decision, opened = _escalate(queue, alice)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO queue_app_reviewitem (queue_id, intake_queue_id, state, priority, "
            "created_at, subject, payload, source_hash, trace_id, lease_count, "
            "escalated_from_id, idempotency_key, excluded_reviewer_ids) "
            "VALUES (%s, %s, 'pending', 0, now(), 'copy', '{}', '', %s, 0, %s, 'k', '{}') "
            "RETURNING excluded_reviewer_ids",
            [opened.queue_id, opened.queue_id, uuid.uuid4(), decision.item_id],
        )
        assert cursor.fetchone()[0] == [alice.pk]


def test_an_excluded_admin_cannot_overturn_the_escalations_decision(queue, supervisor, bob):
    make_items(queue, 1)
    _, opened = _escalate(queue, supervisor)
    decided = _decide(opened.queue, bob)
    with pytest.raises(NotPermitted, match="hand-off"):
        overturn_decision(
            decision_id=decided.pk,
            admin=supervisor,
            corrected_verdict="reject",
            reason_code="reviewer_error",
        )


# -- both ways: what the item says about where it came from and went ----------------------------


def test_the_handoff_names_who_when_why_and_links_both_ways(queue, alice, bob):
    make_items(queue, 1)
    decision, opened = _escalate(queue, alice)
    arrived = item_handoff(item=opened).arrived
    assert len(arrived) == 1
    (a,) = arrived
    assert (a.kind, a.by, a.from_item_id, a.decision.pk) == (
        "decision",
        ["alice"],
        decision.item_id,
        decision.pk,
    )
    assert (a.note, a.reason_label, a.at) == (NOTE, "policy_gap", decision.created_at)
    assert item_handoff(item=opened).excluded == ["alice"]
    origin = ReviewItem.objects.get(pk=decision.item_id)
    assert [e.pk for e in item_handoff(item=origin).escalations] == [opened.pk]


# -- concurrency: real connections, real commits ------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_excluded_reviewer_never_gets_an_escalation_while_others_do(
    queue, alice, bob, reviewers_group
):
    escalations = 12
    make_items(queue, escalations, prefix="origin")
    opened = [_escalate(queue, alice)[1].pk for _ in range(escalations)]
    escalation = queue.escalation_queue
    # Plain work in the same queue, so alice is given something and races the others.
    make_items(escalation, 6, prefix="plain")
    others = [bob] + [_user(f"rev{i}", reviewers_group) for i in range(3)]
    people = [alice, *others]

    def work(i: int) -> list[int]:
        reviewer = people[i]
        got = []
        while (lease := claim_next(queue=escalation, reviewer=reviewer)) is not None:
            got.append(lease.pk)
            submit_decision(
                item_id=lease.pk,
                reviewer=reviewer,
                lease_token=lease.lease_token,
                verdict="approve",
                reason_code="verified",
                evidence_hash=shown_hash(lease),
            )
        return got

    taken = run_in_threads(len(people), work)
    assert not set(taken[0]) & set(opened), "alice was handed an escalation she escalated"
    by_others = [pk for got in taken[1:] for pk in got]
    assert set(opened) <= set(by_others)
    everything = [pk for got in taken for pk in got]
    assert len(everything) == len(set(everything)) == escalations + 6
    assert not Decision.objects.filter(item_id__in=opened, reviewer=alice).exists()
