"""A refused fenced write says what happened: released by you, taken, decided, escalated."""

from __future__ import annotations

import pytest
from django.test import Client

from queue_app.models import Decision, ReviewItem
from queue_app.services import claim_next, escalate_abandoned, release_lease, submit_decision
from tests.conftest import backdate_lease, make_items, shown_hash
from tests.console.test_decide import form

pytestmark = pytest.mark.django_db


def _decide_with(client: Client, item: ReviewItem, page: dict) -> str:
    response = client.post(f"/items/{item.pk}/decide/", page, follow=True)
    assert response.redirect_chain == [(f"/items/{item.pk}/", 302)]
    return response.content.decode()


def test_a_release_in_another_tab_is_named_as_such(alice_client: Client, alice, queue):
    item, _ = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    page = form(item)  # tab one shows the item
    # Tab two releases it.
    release_lease(item_id=item.pk, reviewer=alice, lease_token=page["lease_token"])

    html = _decide_with(alice_client, item, page)
    assert "You released this item (perhaps in another tab), so it went back to the queue." in html
    assert "reassigned" not in html
    assert not Decision.objects.exists()


def test_a_release_and_a_new_next_in_another_tab_says_the_newer_lease_holds(
    alice_client: Client, alice, queue
):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    page = form(item)
    release_lease(item_id=item.pk, reviewer=alice, lease_token=page["lease_token"])
    assert claim_next(queue=queue, reviewer=alice).pk == item.pk  # the only one: back to her

    html = _decide_with(alice_client, item, page)
    assert "You have this item open again under a newer lease" in html
    assert not Decision.objects.exists()


def test_a_release_then_someone_else_taking_it_says_both(alice_client: Client, alice, bob, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    page = form(item)
    release_lease(item_id=item.pk, reviewer=alice, lease_token=page["lease_token"])
    claim_next(queue=queue, reviewer=bob)

    html = _decide_with(alice_client, item, page)
    assert "You released this item and bob has taken it since." in html


def test_a_decision_already_made_in_another_tab_is_named(alice_client: Client, alice, queue):
    item, _ = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    page = form(item)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=page["lease_token"],
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(item),
    )

    html = _decide_with(alice_client, item, page)
    assert "You already decided this item (reject), perhaps in another tab." in html
    assert Decision.objects.count() == 1


@pytest.mark.parametrize(
    "verdict, reason, said",
    [
        ("approve", "verified", "Bob decided this item while you had it open."),
        ("escalate", "policy_gap", "Bob escalated this item while you had it open."),
    ],
)
def test_someone_elses_verdict_is_named(
    alice_client: Client, alice, bob, queue, verdict, reason, said
):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    page = form(item)
    backdate_lease(item.pk)
    taken = claim_next(queue=queue, reviewer=bob)
    submit_decision(
        item_id=item.pk,
        reviewer=bob,
        lease_token=taken.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(item),
    )
    assert said in _decide_with(alice_client, item, page)


def test_an_automatic_escalation_is_named(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    ReviewItem.objects.filter(pk=item.pk).update(lease_count=queue.escalation_threshold - 1)
    claim_next(queue=queue, reviewer=alice)
    page = form(item)
    backdate_lease(item.pk)
    assert escalate_abandoned() == 1

    html = _decide_with(alice_client, item, page)
    assert "This item was moved to the escalation queue" in html
    assert not Decision.objects.exists()


def test_a_release_in_another_tab_is_named_on_release_too(alice_client: Client, alice, queue):
    item, _ = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    page = form(item)
    release_lease(item_id=item.pk, reviewer=alice, lease_token=page["lease_token"])
    response = alice_client.post(
        f"/items/{item.pk}/release/", {"lease_token": page["lease_token"]}, follow=True
    )
    assert "You released this item (perhaps in another tab)" in response.content.decode()


def test_the_api_keeps_its_error_code_and_adds_what_happened(queue):
    from tests.api.conftest import caller_for, make_client

    _, token = make_client("robot", [queue])
    api = caller_for(token)
    make_items(queue, 2)
    entry = api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"][0]
    assert api.post(f"/items/{entry['id']}/release", {"lease_token": entry["lease_token"]}).status
    reply = api.post(
        f"/items/{entry['id']}/decision",
        {
            "lease_token": entry["lease_token"],
            "verdict": "approve",
            "reason_code": "verified",
            "evidence_hash": entry["evidence_hash"],
        },
    )
    assert reply.status == 409
    assert reply.body["error"]["code"] == "stale_lease"
    assert reply.body["error"]["details"] == {"what": "released_by_you"}
    assert reply.body["error"]["message"].startswith("You released this item")
