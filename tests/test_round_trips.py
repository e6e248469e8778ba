"""claim_next and submit_decision commit inside their last round trip; nothing half-written.

These run as the outermost transaction with real commits (transaction=True), the path where
managers.run_together sends the COMMIT with the statements. The tests in a test transaction
cover the other path, where the atomic block ends with a savepoint release as usual.
"""

from __future__ import annotations

import pytest
from django.db import connection

from queue_app.errors import InvalidReason, NotPermitted
from queue_app.models import Decision, EffectJob, ItemEvent, ReviewItem
from queue_app.services import claim_next, submit_decision
from tests.conftest import make_items, shown_hash

pytestmark = pytest.mark.django_db(transaction=True)


def _in_another_connection(sql: str, params: list) -> list[tuple]:
    """Read what is committed, from a connection of its own."""
    import psycopg

    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        password=settings["PASSWORD"] or None,
        autocommit=True,
    ) as other:
        return other.execute(sql, params).fetchall()


def test_a_claim_is_committed_when_claim_next_returns(queue, alice):
    make_items(queue, 3)
    item = claim_next(queue=queue, reviewer=alice)
    assert not connection.in_atomic_block
    assert _in_another_connection(
        "SELECT state, lease_owner_id, lease_token FROM queue_app_reviewitem WHERE id = %s",
        [item.pk],
    ) == [("leased", alice.pk, item.lease_token)]


def test_next_item_for_a_reviewer_without_access_writes_nothing(queue, alice, outsider):
    make_items(queue, 3)
    held = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(NotPermitted):
        claim_next(queue=queue, reviewer=outsider)
    leased = ReviewItem.objects.filter(state="leased")
    assert list(leased.values_list("pk", "lease_owner_id")) == [(held.pk, alice.pk)]
    assert not ItemEvent.objects.filter(actor=outsider).exists()


def test_a_reviewer_who_lost_access_does_not_get_their_lease_renewed(queue, alice):
    make_items(queue, 3)
    item = claim_next(queue=queue, reviewer=alice)
    alice.groups.clear()
    with pytest.raises(NotPermitted):
        claim_next(queue=queue, reviewer=alice)
    after = ReviewItem.objects.get(pk=item.pk)
    assert after.lease_expires == item.lease_expires
    assert ReviewItem.objects.filter(state="leased").count() == 1


def test_an_invalid_reason_fails_the_committing_round_trip_and_leaves_the_lease(queue, alice):
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    # Retired codes and another verdict's codes are outside the set as much as a made-up one.
    queue.reason_codes.filter(code="verified").update(retired_at="2026-01-01T00:00:00Z")
    for verdict, code in (
        ("approve", "no-such-code"),
        ("approve", "verified"),
        ("reject", "within_tolerance"),
    ):
        with pytest.raises(InvalidReason):
            submit_decision(
                item_id=item.pk,
                reviewer=alice,
                lease_token=item.lease_token,
                verdict=verdict,
                reason_code=code,
                evidence_hash=shown_hash(item),
            )
        # The close rolled back with the failed insert: still leased to alice, same token.
        assert _in_another_connection(
            "SELECT state, lease_token FROM queue_app_reviewitem WHERE id = %s", [item.pk]
        ) == [("leased", item.lease_token)]
    assert not Decision.objects.exists()
    assert not EffectJob.objects.exists()

    reason = queue.reason_codes.filter(verdict="approve", retired_at__isnull=True).first()
    decision = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code=reason.code,
        evidence_hash=shown_hash(item),
    )
    assert _in_another_connection(
        "SELECT d.reason_code_id, i.state FROM queue_app_decision d "
        "JOIN queue_app_reviewitem i ON i.id = d.item_id WHERE d.id = %s",
        [decision.pk],
    ) == [(reason.pk, "decided")]
    assert EffectJob.objects.filter(decision=decision).count() == 1


def test_a_round_trip_writes_its_statements_together_at_the_sync(queue, alice, monkeypatch):
    # psycopg writes a pipeline's statements one by one as they are executed; run_together has
    # it queue them and write them all at the sync (managers.send_at_sync). Seen from psycopg's
    # send loop: the commands waiting when it is called.
    from psycopg import _pipeline_base

    waiting: list[int] = []
    communicate = _pipeline_base.pipeline_communicate

    def counting(pgconn, commands):
        waiting.append(len(commands))
        return (yield from communicate(pgconn, commands))

    monkeypatch.setattr(_pipeline_base, "pipeline_communicate", counting)
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    # BEGIN, the guard, the renew, the claim, COMMIT and the Sync, in one write.
    assert item is not None
    assert max(waiting) >= 6
    assert len(waiting) == 1
