"""POST /api/v1/items/{id}/decision and /release: fenced like a reviewer's, safe to retry."""

from __future__ import annotations

import pytest

from queue_app.models import Decision, ReviewItem
from tests.conftest import backdate_lease, make_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def leased(api, queue) -> dict:
    """One item leased to the robot through the API: the lease entry as the API returned it."""
    make_items(queue, 1)
    return api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"][0]


def decision_body(entry: dict, **fields) -> dict:
    return {
        "lease_token": entry["lease_token"],
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": entry["evidence_hash"],
        **fields,
    }


def test_it_records_a_decision_with_201(api, leased, robot_client):
    reply = api.post(f"/items/{leased['id']}/decision", decision_body(leased, note="auto"))
    assert reply.status == 201
    decision = Decision.objects.get()
    assert reply.body["id"] == decision.pk
    assert (decision.verdict, decision.reason_code.code, decision.note) == (
        "approve",
        "verified",
        "auto",
    )
    assert decision.reviewer == robot_client[0].user
    assert str(decision.lease_token) == leased["lease_token"]
    assert reply.body["applied"] == "pending"
    assert ReviewItem.objects.get().state == "decided"


def test_a_retry_of_the_same_completion_returns_the_same_decision_with_200(api, leased):
    first = api.post(f"/items/{leased['id']}/decision", decision_body(leased))
    retry = api.post(f"/items/{leased['id']}/decision", decision_body(leased))
    assert (first.status, retry.status) == (201, 200)
    assert retry.body == first.body
    assert Decision.objects.count() == 1


def test_a_different_completion_on_the_same_token_is_a_stale_lease(api, leased):
    api.post(f"/items/{leased['id']}/decision", decision_body(leased))
    reply = api.post(
        f"/items/{leased['id']}/decision",
        decision_body(leased, verdict="reject", reason_code="fraud"),
    )
    assert reply.status == 409
    assert reply.body["error"]["code"] == "stale_lease"
    assert Decision.objects.count() == 1


def test_it_refuses_a_stale_lease_with_409(api, queue, leased, bob):
    from queue_app.services import claim_next

    backdate_lease(leased["id"])
    claim_next(queue=queue, reviewer=bob)  # bob takes the expired lease over
    reply = api.post(f"/items/{leased['id']}/decision", decision_body(leased))
    assert reply.status == 409
    assert reply.body["error"]["code"] == "stale_lease"
    # The code stays stale_lease; the message and details say what happened.
    assert "took this item after your lease ran out" in reply.body["error"]["message"]
    assert reply.body["error"]["details"] == {"what": "taken"}
    assert not Decision.objects.exists()


def test_it_refuses_changed_evidence_with_409(api, leased):
    reply = api.post(
        f"/items/{leased['id']}/decision", decision_body(leased, evidence_hash="0" * 64)
    )
    assert reply.status == 409
    assert reply.body["error"]["code"] == "evidence_changed"
    assert ReviewItem.objects.get().state == "leased"  # nothing half-written


def test_it_refuses_a_reason_outside_the_closed_set_with_422_listing_the_allowed(api, leased):
    reply = api.post(f"/items/{leased['id']}/decision", decision_body(leased, reason_code="fraud"))
    assert reply.status == 422
    assert reply.body["error"]["code"] == "invalid_reason"
    assert reply.body["error"]["details"]["allowed"] == ["verified", "within_tolerance"]
    item = ReviewItem.objects.get()
    assert item.state == "leased"
    assert str(item.lease_token) == leased["lease_token"]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"verdict": "overturn"}, "verdict: Input should be 'approve', 'reject' or 'escalate'"),
        ({"lease_token": "not-a-uuid"}, "lease_token:"),
        ({"evidence_hash": "abc"}, "evidence_hash: must be exactly 64 characters long"),
        ({"note": "n" * 10_001}, "note: must be between 0 and 10000 characters long"),
    ],
)
def test_it_names_what_is_wrong_with_a_bad_decision(api, leased, fields, expected):
    reply = api.post(f"/items/{leased['id']}/decision", decision_body(leased, **fields))
    assert reply.status == 422
    assert expected in reply.body["error"]["message"]
    assert not Decision.objects.exists()


def test_an_item_id_outside_the_range_is_422(api):
    reply = api.get(f"/items/{2**63}")
    assert reply.status == 422
    assert "item_id: must be between 1 and 9223372036854775807" in reply.body["error"]["message"]


def test_release_returns_the_item_to_its_queue(api, leased):
    reply = api.post(f"/items/{leased['id']}/release", {"lease_token": leased["lease_token"]})
    assert reply.status == 200
    assert reply.body == {"id": leased["id"], "state": "pending"}
    item = ReviewItem.objects.get()
    assert (item.state, item.lease_token) == ("pending", None)


def test_release_with_a_stale_token_is_409(api, leased):
    api.post(f"/items/{leased['id']}/release", {"lease_token": leased["lease_token"]})
    reply = api.post(f"/items/{leased['id']}/release", {"lease_token": leased["lease_token"]})
    assert reply.status == 409
    assert reply.body["error"]["code"] == "stale_lease"


def test_escalating_without_an_escalation_queue_is_422(api, queue, robot_client):
    from tests.conftest import make_queue

    flat = make_queue("flat")
    robot_client[0].queues.add(flat)
    make_items(flat, 1)
    entry = api.post("/queues/flat/leases", {"batch_size": 1}).body["items"][0]
    reply = api.post(
        f"/items/{entry['id']}/decision",
        decision_body(entry, verdict="escalate", reason_code="policy_gap"),
    )
    assert reply.status == 422
    assert reply.body["error"]["code"] == "invalid_verdict"


# -- one client, several processes: only the token tells their leases apart -----------------------


def _leased_again(api, entry: dict) -> dict:
    """The lease lapses and the same client leases the item again: the new lease entry."""
    backdate_lease(entry["id"])
    (again,) = api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"]
    assert again["id"] == entry["id"]
    assert again["lease_token"] != entry["lease_token"]
    return again


def test_the_same_client_cannot_decide_with_the_token_of_its_lapsed_lease(api, leased):
    newer = _leased_again(api, leased)
    reply = api.post(f"/items/{leased['id']}/decision", decision_body(leased))
    assert reply.status == 409
    assert reply.body["error"]["code"] == "stale_lease"
    assert not Decision.objects.exists()
    item = ReviewItem.objects.get()
    assert (item.state, str(item.lease_token)) == ("leased", newer["lease_token"])
    assert api.post(f"/items/{leased['id']}/decision", decision_body(newer)).status == 201


def test_the_same_client_cannot_release_with_the_token_of_its_lapsed_lease(api, leased):
    newer = _leased_again(api, leased)
    reply = api.post(f"/items/{leased['id']}/release", {"lease_token": leased["lease_token"]})
    assert reply.status == 409
    assert reply.body["error"]["code"] == "stale_lease"
    item = ReviewItem.objects.get()
    assert (item.state, str(item.lease_token)) == ("leased", newer["lease_token"])


@pytest.mark.parametrize("action", ["decision", "release"])
def test_a_token_of_another_of_my_leases_is_refused(api, queue, action):
    make_items(queue, 2)
    mine, other = api.post("/queues/kyc/leases", {"batch_size": 2}).body["items"]
    body = (
        decision_body(mine, lease_token=other["lease_token"])
        if action == "decision"
        else {"lease_token": other["lease_token"]}
    )
    reply = api.post(f"/items/{mine['id']}/{action}", body)
    assert reply.status == 409
    assert reply.body["error"]["code"] == "stale_lease"
    assert not Decision.objects.exists()
    item = ReviewItem.objects.get(pk=mine["id"])
    assert (item.state, str(item.lease_token)) == ("leased", mine["lease_token"])


def test_a_random_token_on_an_item_i_hold_is_refused(api, leased):
    import uuid

    reply = api.post(
        f"/items/{leased['id']}/decision", decision_body(leased, lease_token=str(uuid.uuid4()))
    )
    assert reply.status == 409
    assert not Decision.objects.exists()
