"""POST /api/v1/queues/{slug}/leases: batches with tokens, expiry and evidence hash."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from queue_app.models import ReviewItem
from queue_app.services import database_now
from tests.conftest import make_items, shown_hash

pytestmark = pytest.mark.django_db


def test_it_leases_twenty_for_thirty_seconds_by_default(api, queue, robot_client):
    make_items(queue, 25)
    before = database_now()
    reply = api.post("/queues/kyc/leases")
    assert reply.status == 200
    assert reply.body["lease_seconds"] == 30
    assert len(reply.body["items"]) == 20
    leased = ReviewItem.objects.filter(state="leased")
    assert leased.count() == 20
    assert {i.lease_owner_id for i in leased} == {robot_client[0].user_id}
    for item in leased:
        assert timedelta(seconds=29) < item.lease_expires - before < timedelta(seconds=31)


def test_each_leased_item_carries_its_token_expiry_hash_and_exact_payload(api, queue):
    make_items(queue, 3)
    reply = api.post("/queues/kyc/leases", {"batch_size": 3, "lease_seconds": 60})
    for entry in reply.body["items"]:
        item = ReviewItem.objects.get(pk=entry["id"])
        assert entry["lease_token"] == str(item.lease_token)
        assert entry["lease_expires"] == item.lease_expires.isoformat()
        assert entry["evidence_hash"] == shown_hash(item)
        assert entry["payload"] == item.payload
        assert entry["lease_count"] == 1


def test_it_returns_an_empty_batch_when_nothing_is_waiting(api, queue):
    reply = api.post("/queues/kyc/leases", {"batch_size": 5})
    assert (reply.status, reply.body["items"]) == (200, [])


def test_a_second_batch_never_repeats_a_live_lease(api, queue):
    make_items(queue, 10)
    first = {i["id"] for i in api.post("/queues/kyc/leases", {"batch_size": 6}).body["items"]}
    second = {i["id"] for i in api.post("/queues/kyc/leases", {"batch_size": 6}).body["items"]}
    assert len(first) == 6
    assert len(second) == 4
    assert first.isdisjoint(second)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"batch_size": 0}, "batch_size: must be between 1 and 200"),
        ({"batch_size": 201}, "batch_size: must be between 1 and 200"),
        ({"lease_seconds": 0}, "lease_seconds: must be between 1 and 120"),
        ({"lease_seconds": 121}, "lease_seconds: must be between 1 and 120"),
        ({"batch_size": "many"}, "batch_size: Input should be a valid integer"),
    ],
)
def test_it_names_the_valid_range_of_a_bad_bound(api, queue, body, expected):
    make_items(queue, 1)
    reply = api.post("/queues/kyc/leases", body)
    assert reply.status == 422
    assert expected in reply.body["error"]["message"]
    assert not ReviewItem.objects.filter(state="leased").exists()


@pytest.mark.parametrize(("batch_size", "lease_seconds"), [(1, 1), (200, 120)])
def test_it_accepts_the_edges_of_each_range(api, queue, batch_size, lease_seconds):
    reply = api.post(
        "/queues/kyc/leases", {"batch_size": batch_size, "lease_seconds": lease_seconds}
    )
    assert reply.status == 200


def test_an_unknown_queue_is_404(api):
    reply = api.post("/queues/nope/leases", {})
    assert reply.status == 404
    assert "nope" in reply.body["error"]["message"]


@pytest.mark.parametrize(
    ("slug", "expected"),
    [("%00", "slug: must not contain NUL"), ("q" * 65, "slug: must be between 1 and 64")],
)
def test_a_malformed_queue_slug_is_422_not_a_server_error(api, slug, expected):
    reply = api.post(f"/queues/{slug}/leases", {})
    assert reply.status == 422
    assert expected in reply.body["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        # Each was coerced: true leased for 1 second, "5" and 5.0 for 5 items.
        {"lease_seconds": True},
        {"lease_seconds": "30"},
        {"batch_size": "5"},
        {"batch_size": Decimal("5.0")},
        {"batch_size": Decimal("5E+1")},  # written 5E+1
        {"batch_size": False},
    ],
)
def test_it_takes_integers_only_as_json_integers(api, queue, body):
    make_items(queue, 1)
    reply = api.post("/queues/kyc/leases", body)
    assert reply.status == 422
    (field,) = body
    assert reply.body["error"] == {
        "code": "invalid",
        "message": f"Invalid request: {field}: Input should be a valid integer",
        "details": [
            {"field": field, "type": "int_type", "message": "Input should be a valid integer"}
        ],
    }
    assert not ReviewItem.objects.filter(state="leased").exists()
