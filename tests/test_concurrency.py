"""Concurrency claims, proven with separate connections and real commits."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction

from queue_app.chain import seal_all, seal_pending
from queue_app.errors import StaleLease
from queue_app.models import ChainEntry, ChainVerification, Decision, ReviewItem, UnsealedDecision
from queue_app.services import claim_batch, claim_next
from tests.blocking import Session
from tests.conftest import approve_as_shown, make_items, run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_connections_claim_disjoint_sets_while_one_transaction_is_open(queue, alice, bob):
    make_items(queue, 40)
    a_claimed = threading.Event()
    b_done = threading.Event()

    def claimer(i: int) -> set[int]:
        if i == 0:
            # Hold the first claim's row locks open until the second claimer has finished.
            with transaction.atomic():
                got = claim_batch(queue=queue, worker=alice, n=20, ttl=timedelta(minutes=1))
                a_claimed.set()
                assert b_done.wait(30)
            return {item.pk for item in got}
        assert a_claimed.wait(30)
        got = claim_batch(queue=queue, worker=bob, n=20, ttl=timedelta(minutes=1))
        b_done.set()
        return {item.pk for item in got}

    ids_a, ids_b = run_in_threads(2, claimer)
    assert ids_a.isdisjoint(ids_b)
    assert len(ids_a) == len(ids_b) == 20
    assert ids_a | ids_b == set(ReviewItem.objects.values_list("pk", flat=True))
    owners = Counter(ReviewItem.objects.values_list("lease_owner_id", flat=True))
    assert owners == {alice.pk: 20, bob.pk: 20}


def test_a_reviewer_racing_two_tabs_gets_one_lease(queue, alice):
    make_items(queue, 10)
    got = run_in_threads(8, lambda i: claim_next(queue=queue, reviewer=alice).pk)
    assert len(set(got)) == 1
    assert ReviewItem.objects.filter(state="leased").count() == 1


@pytest.mark.slow
def test_32_claimers_decide_2000_items_exactly_once(queue, reviewers_group):
    make_items(queue, 2000)
    workers = [User.objects.create_user(f"w{i}") for i in range(32)]
    for worker in workers:
        worker.groups.add(reviewers_group)

    stale: list[int] = []

    def drain(i: int) -> list[tuple[int, str, int]]:
        me = workers[i]
        fenced: list[tuple[int, str, int]] = []
        while (item := claim_next(queue=queue, reviewer=me)) is not None:
            fenced.append((item.pk, str(item.lease_token), me.pk))
            try:
                approve_as_shown(item, me)
            except StaleLease:
                stale.append(item.pk)  # a lease lost under us: must never happen here
        return fenced

    claims = [c for per_worker in run_in_threads(32, drain) for c in per_worker]
    decisions = list(Decision.objects.values_list("item_id", "lease_token", "reviewer_id"))
    assert len(decisions) == 2000
    assert len({item_id for item_id, _, _ in decisions}) == 2000
    assert ReviewItem.objects.exclude(state="decided").count() == 0
    # Every decision was fenced by a lease its author really held.
    claimed = set(claims)
    assert all((item_id, str(token), reviewer) in claimed for item_id, token, reviewer in decisions)
    assert stale == []
    assert len(claims) == 2000  # no item was claimed twice: nothing expired in between
    assert len({r for *_, r in decisions}) > 1  # the work really was shared


def test_verify_decisions_holds_after_decisions_inserted_at_once(queue, reviewers_group, capsys):
    make_items(queue, 48)
    deciders = [User.objects.create_user(f"d{i}") for i in range(6)]
    for decider in deciders:
        decider.groups.add(reviewers_group)
    first_items = [claim_next(queue=queue, reviewer=d) for d in deciders]
    opener = User.objects.create_user("opener")
    opener.groups.add(reviewers_group)
    held = claim_next(queue=queue, reviewer=opener)

    def decide_then_drain(me: User, item: ReviewItem) -> int:
        decided = 0
        while item is not None:
            approve_as_shown(item, me)
            decided += 1
            if decided % 3 == 0:
                seal_pending()  # sealers racing the deciders and each other
            item = claim_next(queue=queue, reviewer=me)
        return decided

    sessions = [
        Session(lambda me=me, item=item: decide_then_drain(me, item))
        for me, item in zip(deciders, first_items, strict=True)
    ]
    with transaction.atomic():
        # One decision inserted and not committed: nobody waits for it (no chain lock), so
        # every decider finishes its share while this transaction is still open.
        approve_as_shown(held, opener)
        for session in sessions:
            session.start()
        assert sum(session.outcome() for session in sessions) == 47
    # The held decision committed last; the sealer takes it on its next round.
    seal_all()
    call_command("verify_decisions")
    assert "Decision chain verified: 48 decisions intact." in capsys.readouterr().out
    assert ChainVerification.objects.get().ok
    assert ChainEntry.objects.count() == 48
    assert not UnsealedDecision.objects.exists()
    assert len(set(Decision.objects.values_list("reviewer_id", flat=True))) == 7
