"""An escalation is a hand-off of the whole evidence: the files go with the item, every route."""

from __future__ import annotations

import pytest
from django.db import transaction

from queue_app import effects
from queue_app.apply import apply_one
from queue_app.evidence import attachments_of, item_evidence_hash
from queue_app.models import Decision, ReviewItem
from queue_app.services import claim_next, escalate_abandoned, submit_decision
from tests.attachments.conftest import PDF_BYTES, image_bytes, put_file
from tests.conftest import backdate_lease, run_in_threads, shown_hash

pytestmark = pytest.mark.django_db


def _with_files(upstream, item) -> dict:
    assert put_file(upstream, item.pk, "id-front", image_bytes("PNG")).status == 200
    assert put_file(upstream, item.pk, "statement.pdf", PDF_BYTES).status == 200
    files = attachments_of(ReviewItem.objects.get(pk=item.pk).attachments)
    assert sorted(files) == ["id-front", "statement.pdf"]
    return files


def _escalate(queue, reviewer) -> Decision:
    lease = claim_next(queue=queue, reviewer=reviewer)
    return submit_decision(
        item_id=lease.pk,
        reviewer=reviewer,
        lease_token=lease.lease_token,
        verdict="escalate",
        reason_code="policy_gap",
        evidence_hash=shown_hash(lease),
    )


def test_it_carries_the_files_to_the_item_an_escalate_verdict_opens(
    upstream, item, queue, alice, bob
):
    files = _with_files(upstream, item)
    decision = _escalate(queue, alice)

    assert apply_one()

    opened = ReviewItem.objects.get(escalated_by_decision=decision)
    assert attachments_of(opened.attachments) == files
    # The hash the new item carries attests the files too: it is the hash of the row as stored,
    # and a senior reviewer's decision over the page's hash (files included) goes through.
    assert opened.evidence_hash == item_evidence_hash(opened)
    lease = claim_next(queue=queue.escalation_queue, reviewer=bob)
    assert lease.pk == opened.pk
    decided = submit_decision(
        item_id=lease.pk,
        reviewer=bob,
        lease_token=lease.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(lease),
    )
    assert decided.evidence_hash == item_evidence_hash(opened)


@pytest.mark.django_db(transaction=True)
def test_it_carries_the_files_once_when_the_escalate_effect_runs_again(
    upstream, item, queue, alice
):
    files = _with_files(upstream, item)
    decision = _escalate(queue, alice)
    loaded = Decision.objects.select_related("item", "queue__escalation_queue")

    def escalate(i: int) -> int:
        # Two workers, or one after a crash between the effect and its applied row: each run
        # in its own committed transaction.
        with transaction.atomic():
            return effects.escalate(loaded.get(pk=decision.pk))["escalation_item_id"]

    first, second = run_in_threads(2, escalate)
    third = escalate(2)

    assert first == second == third
    [opened] = ReviewItem.objects.filter(escalated_from=item)
    assert attachments_of(opened.attachments) == files
    assert opened.evidence_hash == item_evidence_hash(opened)


def test_it_adds_the_origins_files_to_an_escalation_written_without_them(
    upstream, item, queue, alice
):
    # Whatever code inserts the escalation row (here one that forgot the files and hashed the
    # payload alone), the database carries the files and drops the hash that left them out.
    files = _with_files(upstream, item)
    decision = _escalate(queue, alice)
    opened = ReviewItem.objects.create(
        queue=queue.escalation_queue,
        subject=item.subject,
        payload=item.payload,
        idempotency_key=None,
        escalated_from=item,
        escalated_by_decision=decision,
        evidence_hash="0" * 64,
    )
    opened.refresh_from_db()
    assert attachments_of(opened.attachments) == files
    assert opened.evidence_hash is None


def test_it_keeps_the_files_of_an_item_moved_by_auto_escalation(upstream, item, queue, alice):
    files = _with_files(upstream, item)
    for _ in range(queue.escalation_threshold):
        backdate_lease(claim_next(queue=queue, reviewer=alice).pk)

    assert escalate_abandoned() == 1

    moved = ReviewItem.objects.get(pk=item.pk)
    assert moved.queue_id == queue.escalation_queue_id
    assert attachments_of(moved.attachments) == files
