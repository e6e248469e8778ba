"""claim_next / claim_batch / renew / release: leases, fences and ordering."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queue_app.db.statements import leases as leases_sql
from queue_app.errors import InvalidBounds, NotPermitted, StaleLease
from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import (
    claim_batch,
    claim_next,
    claim_next_id,
    release_lease,
    renew_lease,
    submit_decision,
)
from tests.conftest import backdate_lease, make_items, shown_hash

pytestmark = pytest.mark.django_db


def test_it_claims_by_priority_then_age(queue, alice):
    low = make_items(queue, 2, prefix="low")
    high = make_items(queue, 1, prefix="high", priority=5)
    first = claim_next(queue=queue, reviewer=alice)
    assert first.pk == high[0].pk
    assert first.state == "leased"
    assert first.lease_owner_id == alice.pk
    assert first.lease_count == 1
    assert first.lease_token is not None
    submit_decision(
        item_id=first.pk,
        reviewer=alice,
        lease_token=first.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(first),
    )
    assert claim_next(queue=queue, reviewer=alice).pk == low[0].pk


def test_it_returns_the_same_live_lease_on_a_second_next(queue, alice):
    make_items(queue, 3)
    first = claim_next(queue=queue, reviewer=alice)
    again = claim_next(queue=queue, reviewer=alice)
    assert again.pk == first.pk
    assert again.lease_token == first.lease_token
    assert again.lease_expires >= first.lease_expires
    assert ReviewItem.objects.filter(state="leased").count() == 1


def test_the_consoles_claim_is_the_same_claim_returning_the_items_id(queue, alice, outsider):
    # claim_next_id (the console opens the item's page next): same order, same lease, same
    # renew on a second Next, same refusal; only the id comes back.
    make_items(queue, 2, prefix="low")
    (high,) = make_items(queue, 1, prefix="high", priority=5)
    assert claim_next_id(queue=queue, reviewer=alice) == high.pk
    leased = ReviewItem.objects.get(pk=high.pk)
    assert (leased.state, leased.lease_owner_id, leased.lease_count) == ("leased", alice.pk, 1)
    assert ItemEvent.objects.filter(item=high, kind="claimed", actor=alice).count() == 1
    assert claim_next_id(queue=queue, reviewer=alice) == high.pk
    again = ReviewItem.objects.get(pk=high.pk)
    assert again.lease_token == leased.lease_token
    assert again.lease_expires >= leased.lease_expires
    with pytest.raises(NotPermitted):
        claim_next_id(queue=queue, reviewer=outsider)


@pytest.mark.parametrize(
    ("for_page", "whole"),
    [
        ("CLAIM_NEXT_ITEM_FOR_PAGE", "CLAIM_NEXT_ITEM"),
        ("RENEW_OWN_LIVE_LEASE_FOR_PAGE", "RENEW_OWN_LIVE_LEASE"),
    ],
)
def test_the_consoles_claim_statements_differ_only_in_what_they_return(for_page, whole):
    # One template each (leases_sql._CLAIM, leases_sql._RENEW_OWN_LIVE_LEASE): a change to the
    # claim cannot reach one of the pair and not the other.
    text, reference = getattr(leases_sql, for_page), getattr(leases_sql, whole)
    returned = "id, trace_id, lease_count"
    assert text.replace(returned, "*").replace("i.id, i.trace_id, i.lease_count", "i.*") == (
        reference
    )
    assert text != reference


def test_it_gives_two_reviewers_different_items(queue, alice, bob):
    make_items(queue, 2)
    assert claim_next(queue=queue, reviewer=alice).pk != claim_next(queue=queue, reviewer=bob).pk


def test_it_returns_none_on_an_empty_queue(queue, alice):
    assert claim_next(queue=queue, reviewer=alice) is None


def test_it_refuses_a_reviewer_without_access(queue, outsider):
    make_items(queue, 1)
    with pytest.raises(NotPermitted):
        claim_next(queue=queue, reviewer=outsider)
    assert ReviewItem.objects.filter(state="leased").count() == 0


def test_it_reclaims_expired_leases_before_fresh_rows_without_a_sweeper(queue, alice, bob):
    items = make_items(queue, 3)
    abandoned = claim_next(queue=queue, reviewer=alice)
    assert abandoned.pk == items[0].pk
    backdate_lease(abandoned.pk)
    # A fresher, higher-priority item exists, but the abandoned one goes first.
    make_items(queue, 1, prefix="urgent", priority=50)
    taken = claim_next(queue=queue, reviewer=bob)
    assert taken.pk == abandoned.pk
    assert taken.lease_owner_id == bob.pk
    assert taken.lease_count == 2
    assert taken.lease_token != abandoned.lease_token
    assert ItemEvent.objects.filter(item_id=taken.pk, kind="reclaimed", actor=bob).exists()


def test_renew_extends_a_matching_lease(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    backdate_lease(item.pk, seconds=1)
    expires = renew_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)
    assert expires > item.lease_expires - timedelta(minutes=5)
    assert ReviewItem.objects.get(pk=item.pk).lease_expires == expires


def test_renew_refuses_a_stale_token(queue, alice, bob):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    backdate_lease(item.pk)
    claim_next(queue=queue, reviewer=bob)
    with pytest.raises(StaleLease):
        renew_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)


def test_renew_refuses_a_forged_token(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(StaleLease):
        renew_lease(item_id=item.pk, reviewer=alice, lease_token="not-a-uuid")


def test_release_returns_the_item_and_fences_the_token(queue, alice, bob):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    with pytest.raises(StaleLease):
        release_lease(item_id=item.pk, reviewer=bob, lease_token=item.lease_token)
    release_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)
    row = ReviewItem.objects.get(pk=item.pk)
    assert (row.state, row.lease_token, row.lease_owner_id) == ("pending", None, None)
    with pytest.raises(StaleLease):
        release_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)


def test_claim_batch_takes_n_and_validates_bounds(queue, alice):
    make_items(queue, 30)
    got = claim_batch(queue=queue, worker=alice, n=20, ttl=timedelta(seconds=30))
    assert len(got) == 20
    assert len({i.pk for i in got}) == 20
    assert len({i.lease_token for i in got}) == 20
    assert len(claim_batch(queue=queue, worker=alice, n=200, ttl=timedelta(seconds=30))) == 10
    for n in (0, 201):
        with pytest.raises(InvalidBounds):
            claim_batch(queue=queue, worker=alice, n=n, ttl=timedelta(seconds=30))
    with pytest.raises(InvalidBounds):
        claim_batch(queue=queue, worker=alice, n=1, ttl=timedelta(hours=2))


def test_claim_batch_takes_expired_leases_first(queue, alice, bob):
    make_items(queue, 5)
    held = claim_batch(queue=queue, worker=alice, n=2, ttl=timedelta(seconds=30))
    for item in held:
        backdate_lease(item.pk)
    got = claim_batch(queue=queue, worker=bob, n=3, ttl=timedelta(seconds=30))
    assert {i.pk for i in held} <= {i.pk for i in got}


# -- the token alone fences renew and release: the same owner, a newer or another lease ----------


def _reclaimed_by_myself(queue, reviewer):
    """Claim, let the lease lapse, claim again (a second tab): return (old, new) leases."""
    old = claim_next(queue=queue, reviewer=reviewer)
    backdate_lease(old.pk)
    new = claim_next(queue=queue, reviewer=reviewer)
    assert (new.pk, new.lease_owner_id) == (old.pk, reviewer.pk)
    assert new.lease_token != old.lease_token
    return old, new


def test_renew_refuses_my_own_old_token_after_i_reclaimed_the_item(queue, alice):
    make_items(queue, 1)
    old, new = _reclaimed_by_myself(queue, alice)
    with pytest.raises(StaleLease):
        renew_lease(item_id=old.pk, reviewer=alice, lease_token=old.lease_token)
    row = ReviewItem.objects.get(pk=old.pk)
    assert (row.lease_token, row.lease_expires) == (new.lease_token, new.lease_expires)
    assert not ItemEvent.objects.filter(item_id=old.pk, kind="renewed").exists()


def test_release_refuses_my_own_old_token_after_i_reclaimed_the_item(queue, alice):
    make_items(queue, 1)
    old, new = _reclaimed_by_myself(queue, alice)
    with pytest.raises(StaleLease):
        release_lease(item_id=old.pk, reviewer=alice, lease_token=old.lease_token)
    row = ReviewItem.objects.get(pk=old.pk)
    assert (row.state, row.lease_owner_id, row.lease_token) == ("leased", alice.pk, new.lease_token)


@pytest.mark.parametrize("action", ["renew", "release"])
def test_a_worker_cannot_use_the_token_of_one_of_its_leases_on_another(queue, alice, action):
    # One API client, several processes: each lease is fenced by its own token only.
    make_items(queue, 2)
    first, second = claim_batch(queue=queue, worker=alice, n=2, ttl=timedelta(minutes=1))
    backdate_lease(first.pk, seconds=1)
    operation = renew_lease if action == "renew" else release_lease
    with pytest.raises(StaleLease):
        operation(item_id=first.pk, reviewer=alice, lease_token=second.lease_token)
    row = ReviewItem.objects.get(pk=first.pk)
    assert (row.state, row.lease_token) == ("leased", first.lease_token)
    assert row.lease_expires < second.lease_expires  # not renewed either
    assert not ItemEvent.objects.filter(kind__in=["renewed", "released"]).exists()
