"""POST /api/v1/items/{id}/hold: an automated worker sets a leased item aside, fenced like a
reviewer's hold (the console's rules: queue_app/services/holds.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from queue_app.models import ItemEvent, ReviewItem
from tests.api.conftest import caller_for, make_client
from tests.clocks.helpers import add_hold_reasons, make_hold_due
from tests.conftest import make_items, make_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def leased(api, queue) -> dict:
    add_hold_reasons(queue)
    make_items(queue, 1)
    return api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"][0]


def hold_body(entry: dict, **fields) -> dict:
    return {
        "lease_token": entry["lease_token"],
        "reason_code": "awaiting_documents",
        "hold_until": (timezone.now() + timedelta(hours=2)).isoformat(),
        **fields,
    }


def test_it_puts_the_item_on_hold_and_ends_the_lease(api, leased, robot_client):
    reply = api.post(f"/items/{leased['id']}/hold", hold_body(leased))
    assert reply.status == 200, reply.body
    item = ReviewItem.objects.get(pk=leased["id"])
    assert (item.state, item.lease_token, item.hold_reason.code) == (
        "held",
        None,
        "awaiting_documents",
    )
    assert reply.body["state"] == "held" and reply.body["reason_code"] == "awaiting_documents"
    assert datetime.fromisoformat(reply.body["hold_until"]) == item.hold_until
    event = ItemEvent.objects.get(item=item, kind="held")
    assert event.actor_id == robot_client[0].user_id
    # Held items are not leased again until their time comes; then first in line.
    assert api.post("/queues/kyc/leases", {"batch_size": 5}).body["items"] == []
    make_hold_due(item.pk)
    [back] = api.post("/queues/kyc/leases", {"batch_size": 5}).body["items"]
    assert back["id"] == item.pk


def test_the_token_fences_the_hold(api, leased):
    first = api.post(f"/items/{leased['id']}/hold", hold_body(leased))
    assert first.status == 200
    # The same token again, for another hold (a later time): the lease it names has ended.
    later = (timezone.now() + timedelta(hours=3)).isoformat()
    stale = api.post(f"/items/{leased['id']}/hold", hold_body(leased, hold_until=later))
    assert stale.status == 409 and stale.body["error"]["code"] == "stale_lease"
    forged = api.post(
        f"/items/{leased['id']}/hold",
        hold_body(leased, lease_token="00000000-0000-4000-8000-000000000000"),
    )
    assert forged.status == 409


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"reason_code": "no_such_reason"}, "invalid_hold_reason"),
        ({"hold_until": "2001-01-01T00:00:00Z"}, "invalid_hold_time"),
        ({"hold_until": "2999-01-01T00:00:00Z"}, "invalid_hold_time"),  # past max_hold
        ({"hold_until": "2030-01-01T00:00:00"}, "invalid"),  # no time zone
        ({"hold_until": "tomorrow"}, "invalid"),
        ({"reason_code": ""}, "invalid"),
        ({"reason_code": "a\x00b"}, "invalid"),
        ({"lease_token": "not-a-uuid"}, "invalid"),
    ],
)
def test_bad_holds_are_refused_and_change_nothing(api, leased, fields, code):
    reply = api.post(f"/items/{leased['id']}/hold", hold_body(leased, **fields))
    assert reply.status == 422, reply.body
    assert reply.body["error"]["code"] == code
    item = ReviewItem.objects.get(pk=leased["id"])
    assert item.state == "leased" and str(item.lease_token) == leased["lease_token"]
    assert not ItemEvent.objects.filter(item=item, kind="held").exists()


def test_a_client_without_the_scope_or_the_queue_gets_no_hold(api, leased, queue, reviewers_group):
    _, intake_only = make_client("intake-only", [queue], adjudicate=False)
    refused = caller_for(intake_only).post(f"/items/{leased['id']}/hold", hold_body(leased))
    assert refused.status == 403
    other = make_queue("payments", group=reviewers_group)
    _, elsewhere = make_client("elsewhere", [other])
    hidden = caller_for(elsewhere).post(f"/items/{leased['id']}/hold", hold_body(leased))
    assert hidden.status == 404
    missing = caller_for(elsewhere).post("/items/999999/hold", hold_body(leased))
    assert missing.status == 404
    assert ReviewItem.objects.get(pk=leased["id"]).state == "leased"


@pytest.mark.parametrize(
    "fields", [{"reason_code": "no_such_reason"}, {"hold_until": "2001-01-01T00:00:00Z"}]
)
def test_a_client_not_granted_the_queue_learns_nothing_from_a_bad_hold(
    api, leased, reviewers_group, fields
):
    # Its service user is in the queue's reviewer group, but the client was never granted the
    # queue: the answer is the same 404 as for any item it cannot see, not the queue's rules.
    other = make_queue("payments", group=reviewers_group)
    client, token = make_client("grouped", [other])
    client.user.groups.add(reviewers_group)
    reply = caller_for(token).post(f"/items/{leased['id']}/hold", hold_body(leased, **fields))
    assert reply.status == 404, reply.body


def test_a_retry_of_a_hold_that_went_through_gets_the_same_answer(api, leased, queue):
    # The answer to the first request was lost: the client sends it again, word for word.
    ReviewItem.objects.filter(pk=leased["id"]).update(due_at=timezone.now() + timedelta(hours=1))
    body = hold_body(leased)
    first = api.post(f"/items/{leased['id']}/hold", body)
    assert first.status == 200, first.body
    retry = api.post(f"/items/{leased['id']}/hold", body)
    assert retry.status == 200, retry.body
    assert retry.body == first.body
    # Still one hold: the retry wrote nothing.
    assert ItemEvent.objects.filter(item_id=leased["id"], kind="held").count() == 1
    item = ReviewItem.objects.get(pk=leased["id"])
    assert datetime.fromisoformat(retry.body["due_at"]) == item.due_at


@pytest.mark.parametrize(
    "change",
    [
        {"reason_code": "customer_contacted"},
        {"hold_until": "later"},
    ],
)
def test_a_different_hold_under_the_same_token_is_not_a_retry(api, leased, change):
    body = hold_body(leased)
    assert api.post(f"/items/{leased['id']}/hold", body).status == 200
    if change.get("hold_until") == "later":
        change = {"hold_until": (timezone.now() + timedelta(hours=5)).isoformat()}
    other = api.post(f"/items/{leased['id']}/hold", {**body, **change})
    assert other.status == 409 and other.body["error"]["code"] == "stale_lease"
    assert ItemEvent.objects.filter(item_id=leased["id"], kind="held").count() == 1


def test_another_client_replaying_the_hold_is_refused(api, leased, queue):
    # A second client granted the same queue, replaying the first client's request: the hold
    # was not its own, so it is refused as stale, not answered with the first client's hold.
    body = hold_body(leased)
    assert api.post(f"/items/{leased['id']}/hold", body).status == 200
    _, second = make_client("second", [queue])
    replay = caller_for(second).post(f"/items/{leased['id']}/hold", body)
    assert replay.status == 409 and replay.body["error"]["code"] == "stale_lease"


def test_a_retry_after_the_hold_ended_says_the_state_now(api, leased):
    body = hold_body(leased)
    assert api.post(f"/items/{leased['id']}/hold", body).status == 200
    make_hold_due(leased["id"])
    [back] = api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"]
    assert back["id"] == leased["id"]
    # The first hold's answer was lost; its retry arrives after the item came back and was
    # leased again: the same hold is recognised, and the item is not said to be held.
    retry = api.post(f"/items/{leased['id']}/hold", body)
    assert retry.status == 200, retry.body
    assert retry.body["state"] == "leased" and retry.body["hold_ended"] is True
    assert ItemEvent.objects.filter(item_id=leased["id"], kind="held").count() == 1


def test_a_retry_after_a_later_hold_says_its_own_hold_ended(api, leased):
    body = hold_body(leased)
    first = api.post(f"/items/{leased['id']}/hold", body)
    assert first.status == 200 and first.body["hold_ended"] is False
    make_hold_due(leased["id"])
    [back] = api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"]
    later = (timezone.now() + timedelta(hours=5)).isoformat()
    assert api.post(f"/items/{back['id']}/hold", hold_body(back, hold_until=later)).status == 200
    # The first hold's lost answer, retried now: the item is held, but not by that hold.
    retry = api.post(f"/items/{leased['id']}/hold", body)
    assert retry.status == 200, retry.body
    assert retry.body["state"] == "held" and retry.body["hold_ended"] is True
    assert retry.body["hold_until"] == first.body["hold_until"]


def test_a_retry_is_answered_only_where_the_client_may_see_the_item(
    api, leased, queue, robot_client, reviewers_group
):
    body = hold_body(leased)
    assert api.post(f"/items/{leased['id']}/hold", body).status == 200
    # The client's grant is revoked; its service user happens to be in the queue's reviewer
    # group, so the hold service still recognises the retry. The API answers as for any item
    # the client cannot see, and says nothing of the hold.
    client, _ = robot_client
    client.queues.remove(queue)
    client.user.groups.add(reviewers_group)
    retry = api.post(f"/items/{leased['id']}/hold", body)
    assert retry.status == 404, retry.body
    assert "hold_until" not in str(retry.body)
