"""A release means "not me, not now": the releaser's Next item offers other work first."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from queue_app.models import ItemState, Queue, ReviewItem
from queue_app.services import claim_batch, claim_next, release_lease
from tests.conftest import make_items, run_in_threads

pytestmark = pytest.mark.django_db


def _release(item: ReviewItem, reviewer) -> None:
    release_lease(item_id=item.pk, reviewer=reviewer, lease_token=item.lease_token)


def test_release_records_who_released_the_item_and_when(queue, alice):
    make_items(queue, 1)
    held = claim_next(queue=queue, reviewer=alice)
    _release(held, alice)
    held.refresh_from_db()
    assert held.state == ItemState.PENDING
    assert held.released_by_id == alice.pk
    assert held.released_at is not None


def test_release_then_next_gives_a_different_item_when_one_exists(queue, alice):
    first, second, _third = make_items(queue, 3)
    held = claim_next(queue=queue, reviewer=alice)
    assert held.pk == first.pk
    _release(held, alice)
    assert claim_next(queue=queue, reviewer=alice).pk == second.pk


def test_releasing_again_and_again_walks_the_queue_instead_of_bouncing(queue, alice):
    items = make_items(queue, 3)
    seen = []
    for _ in range(3):
        held = claim_next(queue=queue, reviewer=alice)
        seen.append(held.pk)
        _release(held, alice)
    assert seen == [item.pk for item in items]
    # Everything left is something alice released: she gets the first of those back.
    assert claim_next(queue=queue, reviewer=alice).pk == items[0].pk


def test_release_then_next_gives_the_same_item_back_when_it_is_the_only_one(queue, alice):
    (only,) = make_items(queue, 1)
    _release(claim_next(queue=queue, reviewer=alice), alice)
    again = claim_next(queue=queue, reviewer=alice)
    assert again is not None and again.pk == only.pk


def test_another_reviewer_gets_the_released_item_first(queue, alice, bob):
    first, second = make_items(queue, 2)
    _release(claim_next(queue=queue, reviewer=alice), alice)
    # Not skipped for bob: it keeps its place at the head of the queue.
    assert claim_next(queue=queue, reviewer=bob).pk == first.pk
    assert claim_next(queue=queue, reviewer=alice).pk == second.pk


def test_the_released_item_comes_back_in_order_once_the_queue_window_has_passed(queue, alice):
    first, _second = make_items(queue, 2)
    _release(claim_next(queue=queue, reviewer=alice), alice)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET released_at = now() - interval '16 minutes' "
            "WHERE id = %s",
            [first.pk],
        )
    assert claim_next(queue=queue, reviewer=alice).pk == first.pk


def test_a_queue_with_no_skip_window_gives_the_item_straight_back(queue, alice):
    Queue.objects.filter(pk=queue.pk).update(release_skip=timedelta(0))
    queue.refresh_from_db()
    first, _ = make_items(queue, 2)
    _release(claim_next(queue=queue, reviewer=alice), alice)
    assert claim_next(queue=queue, reviewer=alice).pk == first.pk


def test_a_batch_claim_takes_its_own_releases_last(queue, alice):
    first, second, third = make_items(queue, 3)
    [held] = claim_batch(queue=queue, worker=alice, n=1, ttl=timedelta(minutes=1))
    _release(held, alice)
    batch = claim_batch(queue=queue, worker=alice, n=2, ttl=timedelta(minutes=1))
    assert [item.pk for item in batch] == [second.pk, third.pk]
    # With room to spare, the released item fills the batch.
    rest = claim_batch(queue=queue, worker=alice, n=5, ttl=timedelta(minutes=1))
    assert [item.pk for item in rest] == [first.pk]


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_after_releases_never_share_an_item(queue, alice, bob, reviewers_group):
    make_items(queue, 6)
    for reviewer in (alice, bob):
        _release(claim_next(queue=queue, reviewer=reviewer), reviewer)
    reviewers = [alice, bob]

    def claim(i: int) -> int | None:
        item = claim_next(queue=queue, reviewer=reviewers[i % 2])
        return item.pk if item else None

    # Each reviewer's second claim is a renew of their first; everyone holds one item.
    held = run_in_threads(2, claim)
    assert None not in held and len(set(held)) == 2
    owners = dict(ReviewItem.objects.filter(state="leased").values_list("pk", "lease_owner_id"))
    assert owners == {held[0]: alice.pk, held[1]: bob.pk}


def test_the_database_refuses_a_negative_skip_window(queue):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Queue.objects.filter(pk=queue.pk).update(release_skip=timedelta(minutes=-1))
