"""The lease fence under real concurrency: a Next that waits on a row someone else is writing.

Each test holds a transaction open on the test's own connection (the "first tab" or another
reviewer), starts alice's Next on a second connection in a thread, waits until PostgreSQL
reports that Next blocked on this transaction's row lock, and only then commits. The
interleaving is therefore the same on every run: the Next's subquery has already chosen the
row from its snapshot, and what happens next is decided by the re-check of the outer WHERE
against the row as committed (EvalPlanQual).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import transaction

from queue_app.models import Decision, ReviewItem
from queue_app.services import claim_next, submit_decision
from tests.blocking import Session, wait_until_blocked_by_me
from tests.conftest import backdate_lease, make_items, shown_hash

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def next_waiting_on_this_transaction(reviewer: Any, queue: Any) -> Iterator[Session]:
    """Inside: a held transaction. On exit: Next has blocked on it, then it commits."""
    session = Session(lambda: claim_next(queue=queue, reviewer=reviewer))
    with transaction.atomic():
        yield session
        session.start()
        wait_until_blocked_by_me(session)
    # Committed: the Next's UPDATE now re-checks its outer WHERE on the committed row.


def test_next_while_my_decision_commits_claims_a_fresh_item(queue, alice):
    first, second = make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=alice)
    assert item.pk == first.pk
    with next_waiting_on_this_transaction(alice, queue) as next_tab:
        # The first tab's decision: the close and the insert, not yet committed.
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=item.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(item),
        )
    fresh = next_tab.outcome()  # before the fix: IntegrityError (a renewed decided row)
    assert fresh.pk == second.pk
    assert (fresh.state, fresh.lease_owner_id, fresh.lease_count) == ("leased", alice.pk, 1)
    decided = ReviewItem.objects.get(pk=first.pk)
    assert (decided.state, decided.lease_token, decided.lease_expires) == ("decided", None, None)
    assert Decision.objects.get().item_id == first.pk


def test_next_while_my_decision_commits_on_the_last_item_returns_none(queue, alice):
    (only,) = make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with next_waiting_on_this_transaction(alice, queue) as next_tab:
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=item.lease_token,
            verdict="reject",
            reason_code="fraud",
            evidence_hash=shown_hash(item),
        )
    assert next_tab.outcome() is None
    assert ReviewItem.objects.get(pk=only.pk).state == "decided"


def test_next_never_extends_a_lease_another_reviewer_reclaimed_meanwhile(queue, alice, bob):
    first, second = make_items(queue, 2)
    mine = claim_next(queue=queue, reviewer=alice)
    assert mine.pk == first.pk
    with next_waiting_on_this_transaction(alice, queue) as next_tab:
        # Alice's lease lapses and bob takes it over; his claim is not yet committed, so
        # alice's Next still finds her live lease in its snapshot and waits on the row.
        backdate_lease(mine.pk)
        taken = claim_next(queue=queue, reviewer=bob)
        assert taken.pk == mine.pk
    got = next_tab.outcome()
    bobs = ReviewItem.objects.get(pk=mine.pk)
    # Bob's lease is exactly as his claim left it: not extended, and its token not handed over.
    assert (bobs.lease_owner_id, bobs.lease_token) == (bob.pk, taken.lease_token)
    assert bobs.lease_expires == taken.lease_expires
    assert got.pk == second.pk
    assert (got.lease_owner_id, got.lease_count) == (alice.pk, 1)
    assert got.lease_token != taken.lease_token


def test_next_does_not_renew_a_lease_that_lapsed_while_it_waited(queue, alice):
    (only,) = make_items(queue, 1)
    mine = claim_next(queue=queue, reviewer=alice)
    with next_waiting_on_this_transaction(alice, queue) as next_tab:
        backdate_lease(mine.pk)  # lapses, as the row is when the Next gets its lock
    got = next_tab.outcome()
    # The renew refuses the lapsed lease (the row as written decides, not the snapshot) and the
    # claim that follows takes it back as an expired lease: a new token, counted.
    assert got.pk == only.pk
    assert got.lease_token != mine.lease_token
    assert got.lease_count == 2
