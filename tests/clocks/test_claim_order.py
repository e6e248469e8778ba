"""Next item's order with deadlines, priorities and holds mixed; concurrent claimers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from queue_app.models import ReviewItem
from queue_app.services import claim_batch, claim_next, hold_item
from tests.clocks.helpers import add_hold_reasons, item, make_hold_due
from tests.conftest import run_in_threads


def _mixed(queue, holder) -> dict[str, int]:
    """Items whose claim order is known: returns name -> id."""
    now = timezone.now()
    add_hold_reasons(queue)
    # Two items go on hold first, through the service, fenced by a real lease; one is then due.
    held = {
        "held_due": item(queue, "held_due", due_at=now + timedelta(days=9)),
        "held_later": item(queue, "held_later", priority=50),
    }
    for leased in claim_batch(queue=queue, worker=holder, n=2, ttl=timedelta(minutes=5)):
        hold_item(
            item_id=leased.pk,
            reviewer=holder,
            lease_token=leased.lease_token,
            reason_code="awaiting_documents",
            hold_until=timezone.now() + timedelta(hours=2),
        )
    make_hold_due(held["held_due"].pk)
    made = {
        # created in this order, so age alone would say p0_none first
        "p0_none": item(queue, "p0_none"),
        "p0_late": item(queue, "p0_late", due_at=now + timedelta(days=3)),
        "p0_soon": item(queue, "p0_soon", due_at=now + timedelta(hours=1)),
        "p5_none": item(queue, "p5_none", priority=5),
        "p5_late": item(queue, "p5_late", priority=5, sla_seconds=7200),
        "p5_overdue": item(queue, "p5_overdue", priority=5, due_at=now - timedelta(minutes=5)),
        "p0_none_2": item(queue, "p0_none_2"),
        **held,
    }
    return {name: it.pk for name, it in made.items()}


# Due holds come back first (like expired leases), then priority, earliest deadline (none
# last), age. held_later (priority 50) is not due: never handed out.
EXPECTED = [
    "held_due",
    "p5_overdue",
    "p5_late",
    "p5_none",
    "p0_soon",
    "p0_late",
    "p0_none",
    "p0_none_2",
]


@pytest.mark.django_db
def test_next_item_goes_by_priority_then_deadline_then_age(queue, alice, bob):
    ids = _mixed(queue, bob)
    order = []
    while got := claim_batch(queue=queue, worker=alice, n=1, ttl=timedelta(minutes=5)):
        order.append(got[0].pk)
    names = {v: k for k, v in ids.items()}
    assert [names[i] for i in order] == EXPECTED
    assert ReviewItem.objects.get(pk=ids["held_later"]).state == "held"


@pytest.mark.django_db
def test_a_reviewers_next_item_follows_the_same_order(queue, alice, bob):
    ids = _mixed(queue, bob)
    first = claim_next(queue=queue, reviewer=alice)
    assert first.pk == ids["held_due"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_claimers_take_exactly_the_head_of_the_order(queue, alice, bob):
    ids = _mixed(queue, bob)
    workers = [User.objects.create_user(f"w{i}") for i in range(4)]
    for w in workers:
        w.groups.add(*alice.groups.all())

    got = run_in_threads(
        4,
        lambda i: [
            it.pk
            for it in claim_batch(queue=queue, worker=workers[i], n=2, ttl=timedelta(minutes=5))
        ],
    )
    claimed = [pk for batch in got for pk in batch]
    # SKIP LOCKED: disjoint, and together exactly the first eight of the order, whatever the
    # interleaving; the hold that is not due is never among them.
    assert len(claimed) == len(set(claimed)) == 8
    assert set(claimed) == {ids[name] for name in EXPECTED}
    assert ReviewItem.objects.get(pk=ids["held_later"]).state == "held"


@pytest.mark.django_db(transaction=True)
def test_concurrent_next_items_never_take_a_hold_before_its_time(queue, alice, bob):
    ids = _mixed(queue, bob)
    reviewers = [User.objects.create_user(f"r{i}") for i in range(8)]
    for r in reviewers:
        r.groups.add(*alice.groups.all())
    got = run_in_threads(
        8, lambda i: getattr(claim_next(queue=queue, reviewer=reviewers[i]), "pk", None)
    )
    taken = [pk for pk in got if pk is not None]
    assert len(taken) == len(set(taken)) == 8
    assert ids["held_later"] not in taken
    assert set(taken) == {ids[name] for name in EXPECTED}
