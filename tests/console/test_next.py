"""POST /queues/<slug>/next/: lease the next item and open it."""

from __future__ import annotations

import pytest
from django.test import Client

from queue_app.errors import QueueEmpty
from queue_app.models import ReviewItem
from tests.conftest import make_items, make_queue, run_in_threads
from tests.console.conftest import login


@pytest.mark.django_db
def test_it_leases_the_next_item_and_opens_it(alice_client: Client, alice, queue):
    first, _ = make_items(queue, 2)
    response = alice_client.post("/queues/kyc/next/")
    assert response.status_code == 302
    assert response["Location"] == f"/items/{first.pk}/"
    first.refresh_from_db()
    assert (first.state, first.lease_owner_id) == ("leased", alice.pk)
    # The token is the fence; it must never travel in a URL.
    assert str(first.lease_token) not in response["Location"]


@pytest.mark.django_db
def test_pressing_next_again_returns_the_item_i_already_hold(alice_client: Client, queue):
    first, _ = make_items(queue, 2)
    alice_client.post("/queues/kyc/next/")
    response = alice_client.post("/queues/kyc/next/")
    assert response["Location"] == f"/items/{first.pk}/"
    assert ReviewItem.objects.filter(state="leased").count() == 1


@pytest.mark.django_db
def test_an_empty_queue_sends_me_back_with_a_message(alice_client: Client, queue):
    response = alice_client.post("/queues/kyc/next/", follow=True)
    assert response.redirect_chain == [("/", 302)]
    assert QueueEmpty.message in response.content.decode()


@pytest.mark.django_db
def test_it_refuses_a_queue_i_lack_with_clear_words(outsider_client: Client, queue):
    make_items(queue, 1)
    response = outsider_client.post("/queues/kyc/next/")
    assert response.status_code == 403
    assert b"You do not have access to this queue" in response.content
    assert b"Traceback" not in response.content
    assert not ReviewItem.objects.filter(state="leased").exists()


@pytest.mark.django_db
def test_who_may_press_next_is_read_when_they_press_it(
    alice_client, alice, queue, django_user_model
):
    """The queue and the access come from the database in one statement per press: a grant
    removed since sign-in refuses at once, and a superuser needs no group."""
    make_items(queue, 2)
    alice.groups.clear()
    response = alice_client.post("/queues/kyc/next/")
    assert response.status_code == 403
    assert b"You do not have access to this queue" in response.content
    root = django_user_model.objects.create_superuser("root", password="pw-root-123456")
    response = login(root).post("/queues/kyc/next/")
    assert response.status_code == 302
    assert ReviewItem.objects.get(lease_owner=root).queue_id == queue.pk


@pytest.mark.django_db
def test_it_answers_404_for_an_unknown_queue(alice_client: Client, queue):
    response = alice_client.post("/queues/nope/next/")
    assert response.status_code == 404
    assert b"There is no such queue" in response.content


@pytest.mark.django_db
def test_it_only_claims_on_post(alice_client: Client, queue):
    make_items(queue, 1)
    assert alice_client.get("/queues/kyc/next/").status_code == 405
    assert not ReviewItem.objects.filter(state="leased").exists()


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_pressing_next_together_get_different_items(alice, bob, reviewers_group):
    queue = make_queue("race", group=reviewers_group)
    make_items(queue, 5)
    clients = [login(alice), login(bob)]

    def press(i: int) -> str:
        return clients[i].post("/queues/race/next/")["Location"]

    for _ in range(3):
        first, second = run_in_threads(2, press)
        assert first != second
        for client, location in zip(clients, (first, second), strict=True):
            # Give each item back so the next round races for the head of the queue again.
            item = ReviewItem.objects.get(pk=int(location.strip("/").split("/")[-1]))
            client.post(f"{location}release/", {"lease_token": str(item.lease_token)})
