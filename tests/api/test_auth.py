"""Bearer tokens: hashed at rest, revocable, scoped, limited to named queues."""

from __future__ import annotations

import hashlib

import pytest

from queue_app.api.auth import revoke_api_client
from tests.api.conftest import caller_for, intake_body, make_client
from tests.conftest import make_items, make_queue

pytestmark = pytest.mark.django_db


def test_it_stores_only_the_sha256_of_the_token(robot_client):
    client, token = robot_client
    client.refresh_from_db()
    assert client.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {client.token_hash, client.token_prefix, client.name}
    assert token.startswith(client.token_prefix)
    assert not client.user.has_usable_password()


@pytest.mark.parametrize(
    "header", [None, "Bearer", "Bearer rc_not-a-real-token", "Basic dXNlcjpwYXNz", "rc_x"]
)
def test_it_refuses_a_missing_or_wrong_token_with_401(queue, robot_client, header):
    from django.test import Client

    headers = {"Authorization": header} if header else {}
    response = Client().get("/api/v1/items/1", headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_it_refuses_a_revoked_token(queue, robot_client, api):
    client, _ = robot_client
    assert api.post("/items", intake_body()).status == 201
    revoke_api_client(client=client)
    reply = api.post("/items", intake_body(key="second"))
    assert reply.status == 401


def test_a_revoked_clients_service_user_loses_queue_access(queue, robot_client):
    from queue_app.services import user_can_review

    client, _ = robot_client
    assert user_can_review(user=client.user, queue=queue)
    revoke_api_client(client=client)
    assert not user_can_review(user=client.user, queue=queue)


def test_it_records_when_a_client_was_last_used(api, robot_client):
    client, _ = robot_client
    assert client.last_used_at is None
    api.get("/items/1")
    client.refresh_from_db()
    assert client.last_used_at is not None


def test_an_adjudicate_only_client_cannot_push_items(queue):
    _, token = make_client("judge", [queue], intake=False)
    reply = caller_for(token).post("/items", intake_body())
    assert reply.status == 403
    assert reply.body["error"]["code"] == "forbidden"
    assert "intake" in reply.body["error"]["message"]


def test_a_client_cannot_push_into_a_queue_it_is_not_granted(queue):
    make_queue("aml")
    _, token = make_client("pusher", [queue])
    reply = caller_for(token).post("/items", intake_body(queue="aml"))
    assert reply.status == 403
    assert "aml" in reply.body["error"]["message"]


def test_a_client_cannot_lease_from_a_queue_it_is_not_granted(queue):
    make_queue("aml")
    _, token = make_client("judge", [queue])
    reply = caller_for(token).post("/queues/aml/leases", {})
    assert reply.status == 403


def test_items_of_other_queues_do_not_exist_for_a_client(queue):
    other = make_queue("aml")
    [item] = make_items(other, 1)
    _, token = make_client("judge", [queue])
    caller = caller_for(token)
    assert caller.get(f"/items/{item.pk}").status == 404
    reply = caller.post(
        f"/items/{item.pk}/release", {"lease_token": "00000000-0000-4000-8000-000000000000"}
    )
    assert reply.status == 404
    assert reply.body["error"]["code"] == "not_found"


def test_a_service_user_reviews_exactly_its_clients_queues(queue, alice, outsider):
    from queue_app.services import queues_for_user

    client, _ = make_client("judge", [queue])
    assert set(queues_for_user(user=client.user).values_list("slug", flat=True)) == {"kyc"}
    # Group grants are untouched by API grants, and nobody else gains anything.
    assert set(queues_for_user(user=alice).values_list("slug", flat=True)) == {"escalation", "kyc"}
    assert not queues_for_user(user=outsider).exists()
