"""Idempotency keys belong to the client that sent them, in the queue it sent them to."""

from __future__ import annotations

import pytest

from queue_app.models import ReviewItem
from queue_app.services import claim_next, escalate_abandoned
from tests.api.conftest import caller_for, intake_body, make_client
from tests.conftest import backdate_lease, make_queue, run_in_threads

pytestmark = pytest.mark.django_db


@pytest.fixture
def aml(reviewers_group):
    return make_queue("aml", group=reviewers_group)


def test_two_clients_on_different_queues_each_get_their_own_item_for_one_key(queue, aml):
    _, kyc_token = make_client("kyc-upstream", [queue])
    _, aml_token = make_client("aml-upstream", [aml])

    first = caller_for(kyc_token).post("/items", intake_body(key="order-1001"))
    second = caller_for(aml_token).post("/items", intake_body(queue="aml", key="order-1001"))

    assert (first.status, second.status) == (201, 201)
    assert first.body["id"] != second.body["id"]
    assert (first.body["queue"], second.body["queue"]) == ("kyc", "aml")
    assert ReviewItem.objects.filter(idempotency_key="order-1001").count() == 2


def test_a_second_client_on_the_same_queue_never_receives_the_first_clients_item(queue):
    _, mine = make_client("mine", [queue])
    _, theirs = make_client("theirs", [queue])
    original = caller_for(mine).post("/items", intake_body(key="order-1001"))

    # Same key, same queue, same content: still someone else's request, so a new item.
    copy = caller_for(theirs).post("/items", intake_body(key="order-1001"))
    # Different content: no conflict either, and nothing about the first item in the reply.
    other = caller_for(theirs).post("/items", intake_body(key="order-2002", source_hash="x"))
    clash = caller_for(theirs).post("/items", intake_body(key="order-1001", source_hash="sha-9"))

    assert (original.status, copy.status, other.status) == (201, 201, 201)
    assert copy.body["id"] != original.body["id"]
    assert clash.status == 409
    assert clash.body["error"]["code"] == "idempotency_conflict"
    # The conflict is with this client's own item, which it may see; never the other one.
    assert str(copy.body["id"]) in clash.body["error"]["message"]
    assert str(original.body["id"]) not in str(clash.body)


def test_a_replay_by_the_same_client_returns_its_own_item(queue, aml):
    _, mine = make_client("mine", [queue, aml])
    _, theirs = make_client("theirs", [queue])
    theirs_first = caller_for(theirs).post("/items", intake_body(key="order-1001"))
    created = caller_for(mine).post("/items", intake_body(key="order-1001"))
    in_aml = caller_for(mine).post("/items", intake_body(queue="aml", key="order-1001"))

    replay = caller_for(mine).post("/items", intake_body(key="order-1001"))
    replay_aml = caller_for(mine).post("/items", intake_body(queue="aml", key="order-1001"))

    assert (replay.status, replay.body["id"]) == (200, created.body["id"])
    assert (replay_aml.status, replay_aml.body["id"]) == (200, in_aml.body["id"])
    assert len({theirs_first.body["id"], created.body["id"], in_aml.body["id"]}) == 3


def test_a_conflict_on_an_item_moved_out_of_sight_names_nothing(queue, alice):
    _, token = make_client("upstream", [queue])
    api = caller_for(token)
    pushed = api.post("/items", intake_body(key="order-1001"))
    # Abandoned three times, the item moves to the escalation queue, not granted to this client.
    for _ in range(queue.escalation_threshold):
        backdate_lease(claim_next(queue=queue, reviewer=alice).pk)
    assert escalate_abandoned() == 1

    replay = api.post("/items", intake_body(key="order-1001"))
    clash = api.post("/items", intake_body(key="order-1001", source_hash="sha-9"))

    for reply in (replay, clash):
        assert reply.status == 409
        assert reply.body["error"]["code"] == "idempotency_conflict"
        assert str(pushed.body["id"]) not in str(reply.body)
        assert "escalation" not in str(reply.body)
    # The key still names that one item: nothing new was opened under it.
    assert ReviewItem.objects.filter(idempotency_key="order-1001").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_clients_racing_one_key_get_one_item_each(queue, aml):
    _, first = make_client("first", [queue])
    _, second = make_client("second", [aml])
    calls = [(first, "kyc"), (second, "aml")] * 4

    def post(i: int) -> tuple[str, int, int]:
        token, slug = calls[i]
        reply = caller_for(token).post("/items", intake_body(queue=slug, key="order-1001"))
        return slug, reply.status, reply.body["id"]

    results = run_in_threads(len(calls), post)

    assert ReviewItem.objects.count() == 2
    for slug in ("kyc", "aml"):
        mine = [(status, item_id) for s, status, item_id in results if s == slug]
        assert sorted(status for status, _ in mine) == [200, 200, 200, 201]
        assert {item_id for _, item_id in mine} == {ReviewItem.objects.get(queue__slug=slug).pk}
