"""POST /items/<id>/release/ and /renew/: fenced by the token from the page."""

from __future__ import annotations

import pytest
from django.test import Client

from queue_app.errors import StaleLease
from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import claim_next
from tests.conftest import backdate_lease, make_items

pytestmark = pytest.mark.django_db

JSON = {"HTTP_ACCEPT": "application/json"}


# What a refused write says when the item is open under the same reviewer's newer lease.
REOPENED = "You have this item open again under a newer lease"


def token_of(item: ReviewItem) -> str:
    item.refresh_from_db()
    return str(item.lease_token)


def test_release_gives_the_item_back(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{item.pk}/release/", {"lease_token": token_of(item)}, follow=True
    )
    assert response.redirect_chain == [("/", 302)]
    assert f"Item #{item.pk} is back in Kyc." in response.content.decode()
    item.refresh_from_db()
    assert (item.state, item.lease_owner_id, item.lease_token) == ("pending", None, None)


def test_release_with_a_stale_token_changes_nothing(alice_client: Client, alice, bob, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    stale = token_of(item)
    backdate_lease(item.pk)
    claim_next(queue=queue, reviewer=bob)
    response = alice_client.post(f"/items/{item.pk}/release/", {"lease_token": stale}, follow=True)
    assert "Bob took this item after your lease ran out." in response.content.decode()
    item.refresh_from_db()
    assert (item.state, item.lease_owner_id) == ("leased", bob.pk)


def test_release_without_a_token_is_refused(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(f"/items/{item.pk}/release/", {}, follow=True)
    assert StaleLease.message in response.content.decode()
    item.refresh_from_db()
    assert item.state == "leased"


def test_renew_extends_my_lease_and_answers_json(alice_client: Client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    backdate_lease(item.pk, seconds=1)  # lapsed, but nobody took it: still mine to renew
    response = alice_client.post(
        f"/items/{item.pk}/renew/", {"lease_token": token_of(item)}, **JSON
    )
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert 290 < body["expires_in"] <= 300  # the queue's five-minute TTL
    item.refresh_from_db()
    assert item.lease_expires.isoformat() == body["expires"]
    assert ItemEvent.objects.filter(item=item, kind="renewed").count() == 1


def test_renew_after_a_takeover_answers_409_with_the_message(alice_client, alice, bob, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    stale = token_of(item)
    backdate_lease(item.pk)
    claim_next(queue=queue, reviewer=bob)
    response = alice_client.post(f"/items/{item.pk}/renew/", {"lease_token": stale}, **JSON)
    assert response.status_code == 409
    assert response.json() == {
        "ok": False,
        "message": "bob took this item after your lease ran out. Nothing from this page was "
        "recorded.",
    }
    item.refresh_from_db()
    assert item.lease_owner_id == bob.pk


def test_renew_without_javascript_redirects_back_to_the_item(alice_client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = alice_client.post(
        f"/items/{item.pk}/renew/", {"lease_token": token_of(item)}, follow=True
    )
    assert response.redirect_chain == [(f"/items/{item.pk}/", 302)]
    assert b"was renewed" in response.content


def test_renew_by_an_outsider_is_not_found(outsider_client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    response = outsider_client.post(
        f"/items/{item.pk}/renew/", {"lease_token": token_of(item)}, **JSON
    )
    assert response.status_code == 404
    assert response.json()["ok"] is False


def _reclaimed_in_a_second_tab(client: Client, alice, item: ReviewItem) -> tuple[str, str]:
    """Alice's lease lapses and her Next in another tab takes the item back: (old, new) token."""
    claim_next(queue=item.queue, reviewer=alice)
    old = token_of(item)
    backdate_lease(item.pk)
    assert client.post(f"/queues/{item.queue.slug}/next/")["Location"] == f"/items/{item.pk}/"
    new = token_of(item)
    assert new != old
    return old, new


def test_my_old_tab_cannot_renew_the_lease_my_second_tab_took(alice_client, alice, queue):
    (item,) = make_items(queue, 1)
    old, new = _reclaimed_in_a_second_tab(alice_client, alice, item)
    backdate_lease(item.pk, seconds=1)  # so a wrongful renew would visibly move it
    item.refresh_from_db()
    expires = item.lease_expires
    response = alice_client.post(f"/items/{item.pk}/renew/", {"lease_token": old}, **JSON)
    assert response.status_code == 409
    assert response.json()["ok"] is False
    assert REOPENED in response.json()["message"]
    item.refresh_from_db()
    assert (str(item.lease_token), item.lease_expires) == (new, expires)
    assert not ItemEvent.objects.filter(item=item, kind="renewed").exists()


def test_my_old_tab_cannot_release_the_lease_my_second_tab_took(alice_client, alice, queue):
    (item,) = make_items(queue, 1)
    old, new = _reclaimed_in_a_second_tab(alice_client, alice, item)
    response = alice_client.post(f"/items/{item.pk}/release/", {"lease_token": old}, follow=True)
    assert REOPENED in response.content.decode()
    item.refresh_from_db()
    assert (item.state, item.lease_owner_id, str(item.lease_token)) == ("leased", alice.pk, new)


@pytest.mark.parametrize("action", ["renew", "release"])
def test_a_foreign_token_on_the_item_i_hold_moves_nothing(alice_client, alice, queue, action):
    import uuid

    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    token = token_of(item)
    backdate_lease(item.pk, seconds=1)
    item.refresh_from_db()
    expires = item.lease_expires
    response = alice_client.post(
        f"/items/{item.pk}/{action}/", {"lease_token": str(uuid.uuid4())}, **JSON
    )
    assert response.status_code in (302, 409)
    item.refresh_from_db()
    assert (item.state, str(item.lease_token), item.lease_expires) == ("leased", token, expires)
