"""POST /items/<id>/decide/: the fenced decision, then the next item opens by itself."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from queue_app.errors import EvidenceChanged, InvalidReason, QueueEmpty, StaleLease
from queue_app.models import Decision, EffectJob, ReviewItem
from queue_app.services import claim_next
from tests.conftest import backdate_lease, make_items, shown_hash

pytestmark = pytest.mark.django_db


# What a refused write says when the item is open under the same reviewer's newer lease.
REOPENED = "You have this item open again under a newer lease"


def form(item: ReviewItem, **overrides: str) -> dict[str, str]:
    """What the item page posts for the reviewer's current lease."""
    item.refresh_from_db()
    data = {
        "lease_token": str(item.lease_token),
        "evidence_hash": shown_hash(item),
        "queue": str(item.queue_id),
        "verdict": "approve",
        "reason_code": "verified",
        "note": "",
    }
    return {**data, **overrides}


def test_it_records_the_decision_and_opens_the_next_item(alice_client: Client, alice, queue):
    first, second = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{first.pk}/decide/", form(first, note="Checked against the registry.")
    )
    assert response.status_code == 302
    assert response["Location"] == f"/items/{second.pk}/"
    decision = Decision.objects.get()
    assert (decision.item_id, decision.reviewer_id, decision.verdict) == (
        first.pk,
        alice.pk,
        "approve",
    )
    assert decision.reason_code.code == "verified"
    assert decision.note == "Checked against the registry."
    assert EffectJob.objects.filter(decision=decision).exists()
    second.refresh_from_db()
    assert (second.state, second.lease_owner_id) == ("leased", alice.pk)

    page = alice_client.get(response["Location"]).content.decode()
    assert f"Recorded approve (verified) on item #{first.pk}." in page


# The one read a decide without a posted queue makes first: the item's queue, by its id.
READS_THE_ITEMS_QUEUE = 'SELECT "queue_app_reviewitem"."queue_id"'


def _decide_statements(client: Client, item: ReviewItem, data: dict[str, str]) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.post(f"/items/{item.pk}/decide/", data)
    assert response.status_code == 302
    assert Decision.objects.filter(item=item).count() == 1
    return [" ".join(q["sql"].split()) for q in ctx.captured_queries]


def test_deciding_and_opening_the_next_item_reads_nothing_the_statements_return(
    alice_client: Client, alice, queue
):
    first, second = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    statements = _decide_statements(alice_client, first, form(first))
    # The decide statement checks the posted queue and the access rule, and returns the reason
    # code for the message and what the claim needs of the queue; how many round trips the
    # decide and the claim take is tests/test_round_trips.py's to pin, at the database layer.
    assert not any(s.startswith('SELECT "queue_app_reasoncode"') for s in statements)
    assert not any(s.startswith("SELECT i.*") for s in statements), "the item row was read"
    assert not any(s.startswith("SELECT q.*") for s in statements), "the queue was read"
    assert not any(s.startswith(READS_THE_ITEMS_QUEUE) for s in statements)
    second.refresh_from_db()
    assert (second.state, second.lease_owner_id) == ("leased", alice.pk)


def test_a_page_from_before_the_posted_queue_is_decided_in_the_items_queue(
    alice_client: Client, alice, queue
):
    first, second = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    data = form(first)
    del data["queue"]
    statements = _decide_statements(alice_client, first, data)
    assert statements[1].startswith(READS_THE_ITEMS_QUEUE)
    second.refresh_from_db()
    assert (second.state, second.lease_owner_id) == ("leased", alice.pk)


@pytest.mark.parametrize("posted", ["", "abc", "-1", "0", "1.5", "٣", str(2**63), "9" * 40])
def test_a_malformed_posted_queue_is_taken_as_none_posted(
    alice_client: Client, alice, queue, posted
):
    first, _second = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    statements = _decide_statements(alice_client, first, form(first, queue=posted))
    assert statements[1].startswith(READS_THE_ITEMS_QUEUE)


def test_another_queue_posted_records_nothing_and_says_the_item_moved_on(
    alice_client: Client, alice, queue
):
    # Someone who may review both queues posts the other one: the decide statement checks the
    # item is in the posted queue, as it checks the token. Nothing is written, no claim made.
    other_queue = queue.escalation_queue
    (item,) = make_items(queue, 1)
    make_items(other_queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{item.pk}/decide/", form(item, queue=str(other_queue.pk)), follow=True
    )
    assert response.redirect_chain == [(f"/items/{item.pk}/", 302)]
    assert not Decision.objects.exists()
    assert not ReviewItem.objects.filter(queue=other_queue, state="leased").exists()
    item.refresh_from_db()
    assert (item.state, item.lease_owner_id) == ("leased", alice.pk)


def test_the_last_decision_sends_me_home_with_a_message(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(f"/items/{item.pk}/decide/", form(item), follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert QueueEmpty.message in response.content.decode()


def test_it_rejects_a_stale_token_and_writes_nothing(alice_client: Client, alice, bob, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    stale = form(item)
    backdate_lease(item.pk)
    claim_next(queue=queue, reviewer=bob)

    response = alice_client.post(f"/items/{item.pk}/decide/", stale, follow=True)
    assert response.redirect_chain == [(f"/items/{item.pk}/", 302)]
    html = response.content.decode()
    assert "Bob took this item after your lease ran out." in html
    assert 'id="decision-form"' not in html
    assert not Decision.objects.exists()
    item.refresh_from_db()
    assert item.lease_owner_id == bob.pk


def test_a_mangled_token_gets_the_stale_lease_message(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{item.pk}/decide/", form(item, lease_token="not-a-uuid"), follow=True
    )
    assert StaleLease.message in response.content.decode()
    assert not Decision.objects.exists()


def test_it_rejects_changed_evidence_and_shows_it_again(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    shown = form(item)
    ReviewItem.objects.filter(pk=item.pk).update(payload={"n": 0, "amount": "99.00"})

    response = alice_client.post(f"/items/{item.pk}/decide/", shown, follow=True)
    html = response.content.decode()
    assert EvidenceChanged.message in html
    assert not Decision.objects.exists()
    # Still mine, now with the new evidence and its hash, ready to decide again.
    item.refresh_from_db()
    assert item.state == "leased" and item.lease_owner_id == alice.pk
    assert f'name="evidence_hash" value="{shown_hash(item)}"' in html
    assert "99.00" in html


def test_a_reason_of_another_verdict_is_refused_keeping_my_note(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{item.pk}/decide/", form(item, reason_code="fraud", note="My careful note")
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert InvalidReason.message in html
    assert "My careful note</textarea>" in html
    assert not Decision.objects.exists()
    item.refresh_from_db()
    assert item.state == "leased"


def test_a_missing_verdict_is_refused_with_clear_words(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(f"/items/{item.pk}/decide/", form(item, verdict=""))
    assert response.status_code == 400
    assert b"Choose a verdict" in response.content
    assert not Decision.objects.exists()


def test_an_overturn_cannot_be_posted_by_a_reviewer(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{item.pk}/decide/", form(item, verdict="overturn", reason_code="reviewer_error")
    )
    assert response.status_code == 400
    assert not Decision.objects.exists()


def test_a_note_longer_than_allowed_is_refused(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(f"/items/{item.pk}/decide/", form(item, note="x" * 10_001))
    assert response.status_code == 400
    assert b"at most 10000 characters" in response.content
    assert not Decision.objects.exists()


def test_an_outsider_cannot_decide_even_with_a_token(outsider_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = outsider_client.post(f"/items/{item.pk}/decide/", form(item))
    assert response.status_code == 404
    assert not Decision.objects.exists()


def test_another_reviewer_cannot_use_my_token(bob_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = bob_client.post(f"/items/{item.pk}/decide/", form(item), follow=True)
    assert "Alice is reviewing this item; it is not yours to decide." in (response.content.decode())
    assert not Decision.objects.exists()


def test_escalate_closes_the_item_and_opens_the_next(alice_client: Client, alice, queue):
    first, second = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{first.pk}/decide/", form(first, verdict="escalate", reason_code="policy_gap")
    )
    assert response["Location"] == f"/items/{second.pk}/"
    assert Decision.objects.get().verdict == "escalate"


def test_deciding_needs_a_post(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    assert alice_client.get(f"/items/{item.pk}/decide/").status_code == 405


def test_my_old_tab_cannot_decide_after_my_second_tab_reclaimed_the_item(
    alice_client: Client, alice, queue
):
    # Tab one shows the item; the lease lapses; Next in tab two takes it back with a new token.
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    old_tab = form(item)
    backdate_lease(item.pk)
    assert alice_client.post("/queues/kyc/next/")["Location"] == f"/items/{item.pk}/"
    new_tab = form(item)
    assert new_tab["lease_token"] != old_tab["lease_token"]

    response = alice_client.post(f"/items/{item.pk}/decide/", old_tab, follow=True)
    assert REOPENED in response.content.decode()
    assert not Decision.objects.exists()
    item.refresh_from_db()
    assert (item.state, str(item.lease_token)) == ("leased", new_tab["lease_token"])
    # The tab holding the newer lease still decides.
    assert alice_client.post(f"/items/{item.pk}/decide/", new_tab).status_code == 302
    assert str(Decision.objects.get().lease_token) == new_tab["lease_token"]


def test_a_foreign_token_on_the_item_i_hold_writes_nothing(alice_client: Client, alice, queue):
    import uuid

    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{item.pk}/decide/", form(item, lease_token=str(uuid.uuid4())), follow=True
    )
    assert REOPENED in response.content.decode()
    assert not Decision.objects.exists()
    item.refresh_from_db()
    assert (item.state, item.lease_owner_id) == ("leased", alice.pk)
