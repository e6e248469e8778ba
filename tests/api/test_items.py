"""GET /api/v1/items/{id} and PUT /api/v1/items/{id}/evidence."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from queue_app.jsonutil import exact_dumps, exact_loads
from queue_app.models import AppliedDecision, EffectJob, ItemEvent, ReviewItem
from queue_app.services import claim_next, overturn_decision, submit_decision
from tests.api.conftest import intake_body
from tests.conftest import make_items, shown_hash

pytestmark = pytest.mark.django_db


def test_it_shows_a_pending_item(api, queue):
    created = api.post("/items", intake_body()).body
    reply = api.get(f"/items/{created['id']}")
    assert reply.status == 200
    assert reply.body == created
    assert reply.body["standing_outcome"] is None


def test_it_shows_decisions_in_order_with_supersedes_and_applied_status(
    api, queue, alice, supervisor
):
    [item] = make_items(queue, 1)
    claimed = claim_next(queue=queue, reviewer=alice)
    first = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(claimed),
    )
    AppliedDecision.objects.create(decision=first)
    overturn = overturn_decision(
        decision_id=first.pk,
        admin=supervisor,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    EffectJob.objects.filter(decision=overturn).update(dead=True)

    reply = api.get(f"/items/{item.pk}")
    assert reply.body["state"] == "decided"
    assert reply.body["standing_outcome"] == "reject"
    decisions = reply.body["decisions"]
    assert [d["id"] for d in decisions] == [first.pk, overturn.pk]
    assert [d["verdict"] for d in decisions] == ["approve", "overturn"]
    assert decisions[1]["supersedes"] == first.pk
    assert decisions[1]["corrected_verdict"] == "reject"
    assert [d["applied"] for d in decisions] == ["applied", "dead"]
    assert decisions[0]["applied_at"] is not None
    assert [d["reviewer"] for d in decisions] == ["alice", "sam"]


def test_it_names_each_decisions_reviewer_as_they_were_when_deciding(api, queue, alice):
    [item] = make_items(queue, 1)
    claimed = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(claimed),
    )
    alice.username = "alice.renamed"
    alice.save(update_fields=["username"])
    (decision,) = api.get(f"/items/{item.pk}").body["decisions"]
    assert decision["reviewer"] == "alice"


def test_it_says_whether_the_lease_is_yours(api, queue, alice):
    make_items(queue, 2)
    mine = api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"][0]["id"]
    theirs = claim_next(queue=queue, reviewer=alice).pk
    assert api.get(f"/items/{mine}").body["leased_to_you"] is True
    assert api.get(f"/items/{theirs}").body["leased_to_you"] is False
    assert api.get(f"/items/{theirs}").body["state"] == "leased"


def test_an_unknown_item_is_404_in_the_error_shape(api):
    reply = api.get("/items/999999")
    assert reply.status == 404
    assert reply.body == {
        "error": {"code": "not_found", "message": "No such item.", "details": None}
    }


def test_it_replaces_the_evidence_of_a_pending_item(api, queue, robot_client):
    created = api.post("/items", intake_body()).body
    new_payload = {"amount": Decimal("99.90"), "match_decision": "PARTIAL"}
    reply = api.put(
        f"/items/{created['id']}/evidence", {"payload": new_payload, "subject": "Payment 42b"}
    )
    assert reply.status == 200
    assert reply.body["payload"] == new_payload
    assert reply.body["subject"] == "Payment 42b"
    assert reply.body["evidence_hash"] != created["evidence_hash"]
    item = ReviewItem.objects.get()
    assert item.payload == new_payload
    assert item.evidence_updated_at is not None
    event = ItemEvent.objects.get(item=item, kind="evidence_replaced")
    assert event.actor == robot_client[0].user
    assert event.detail["previous_evidence_hash"] == created["evidence_hash"]
    assert event.detail["evidence_hash"] == reply.body["evidence_hash"]


def test_a_reviewer_holding_the_item_gets_evidence_changed_after_a_replacement(api, queue, alice):
    from queue_app.errors import EvidenceChanged

    created = api.post("/items", intake_body()).body
    held = claim_next(queue=queue, reviewer=alice)
    shown = shown_hash(held)
    assert (
        api.put(f"/items/{created['id']}/evidence", {"payload": {"amount": "13.00"}}).status == 200
    )
    with pytest.raises(EvidenceChanged):
        submit_decision(
            item_id=held.pk,
            reviewer=alice,
            lease_token=held.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown,
        )
    assert ReviewItem.objects.get().state == "leased"


def test_an_api_worker_holding_the_item_gets_409_evidence_changed(api, queue):
    created = api.post("/items", intake_body()).body
    entry = api.post("/queues/kyc/leases", {"batch_size": 1}).body["items"][0]
    api.put(f"/items/{created['id']}/evidence", {"payload": {"amount": "13.00"}})
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
    assert reply.body["error"]["code"] == "evidence_changed"


def test_it_refuses_to_replace_the_evidence_of_a_decided_item(api, queue, alice):
    created = api.post("/items", intake_body()).body
    held = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=held.pk,
        reviewer=alice,
        lease_token=held.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(held),
    )
    reply = api.put(f"/items/{created['id']}/evidence", {"payload": {"amount": "0"}})
    assert reply.status == 409
    assert reply.body["error"]["code"] == "already_decided"
    assert ReviewItem.objects.get().payload == created["payload"]
    assert not ItemEvent.objects.filter(kind="evidence_replaced").exists()


def test_evidence_replacement_needs_the_intake_scope(queue):
    from tests.api.conftest import caller_for, make_client

    [item] = make_items(queue, 1)
    _, token = make_client("judge", [queue], intake=False)
    reply = caller_for(token).put(f"/items/{item.pk}/evidence", {"payload": {}})
    assert reply.status == 403


# Written as JSON text, because these are the spellings the database rewrites: -0.0 is 0.0,
# 1E+2 is 100, keys come back shortest first, a duplicate key keeps its last value.
NORMALISED_BY_JSONB = (
    '{"zeta": -0.0, "exp": 1E+2, "small": 1.5e-3, "scale": 1.10, "neg_zero_int": -0, '
    '"big": 123456789012345678901234567890123456789, "text": "caf\\u00e9 \\ud83d\\ude00", '
    '"nested": {"bb": [-0.00, 2E1], "a": 1}, "dup": 1, "dup": 2}'
)


def _raw(api, method: str, path: str, body: str) -> bytes:
    return api.http.generic(
        method,
        f"/api/v1{path}",
        data=body.encode(),
        content_type="application/json",
        headers=api._headers(),
    ).content


def test_the_intake_reply_is_byte_for_byte_what_a_later_get_returns(api):
    body = exact_dumps(intake_body(payload={})).replace("{}", NORMALISED_BY_JSONB)
    created = _raw(api, "POST", "/items", body)
    item_id = exact_loads(created)["id"]
    fetched = api.http.get(f"/api/v1/items/{item_id}", headers=api._headers()).content
    assert created == fetched
    # ... and its evidence hash is the one a reviewer's page shows.
    assert exact_loads(created)["evidence_hash"] == shown_hash(ReviewItem.objects.get())


def test_the_evidence_reply_and_its_event_are_what_a_later_get_returns(api):
    item_id = api.post("/items", intake_body()).body["id"]
    replaced = _raw(
        api, "PUT", f"/items/{item_id}/evidence", f'{{"payload": {NORMALISED_BY_JSONB}}}'
    )
    fetched = api.http.get(f"/api/v1/items/{item_id}", headers=api._headers()).content
    assert replaced == fetched
    event = ItemEvent.objects.get(item_id=item_id, kind="evidence_replaced")
    assert event.detail["evidence_hash"] == exact_loads(fetched)["evidence_hash"]


def test_a_payload_too_deep_to_read_is_served_as_its_text_not_a_500(api, queue):
    item_id = api.post("/items", intake_body()).body["id"]
    depth = 3000  # written around intake: jsonb takes it, Python's parser does not
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET payload = (%s || '1' || %s)::jsonb WHERE id = %s",
            ['{"a": ' + "[" * depth, "]" * depth + "}", item_id],
        )
    # Written below the services, so its stored hash was cleared: stored again as an operator
    # does for such rows (the decide refuses an item without one as changed evidence).
    call_command("backfill_evidence_hashes", stdout=StringIO())
    fetched = api.get(f"/items/{item_id}")
    assert fetched.status == 200
    assert fetched.body["payload"].startswith('{"a": [[[[')
    # A batch holding it is answered too (else every batch after its expiry failed), and the
    # hash it carries is the one the decision is checked against.
    leased = api.post("/queues/kyc/leases", {"batch_size": 5})
    assert leased.status == 200
    (item,) = leased.body["items"]
    decided = api.post(
        f"/items/{item_id}/decision",
        {
            "lease_token": item["lease_token"],
            "verdict": "reject",
            "reason_code": "fraud",
            "evidence_hash": item["evidence_hash"],
        },
    )
    assert decided.status == 201


def test_the_database_refuses_a_payload_that_is_not_an_object(api, queue):
    item_id = api.post("/items", intake_body()).body["id"]
    for value in ("[1, 2]", '"text"', "3", "null"):
        with (
            pytest.raises(IntegrityError, match="item_payload_is_object"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(
                "UPDATE queue_app_reviewitem SET payload = %s::jsonb WHERE id = %s",
                [value, item_id],
            )


@pytest.mark.parametrize("value", ["[1, 2]", '"text"', "3", "true", "null"])
def test_an_old_row_with_a_non_object_payload_is_served_not_a_500(api, queue, value):
    item_id = api.post("/items", intake_body()).body["id"]
    with connection.cursor() as cursor:
        # A row written before item_payload_is_object existed: the test drops it inside its own
        # transaction (DDL rolls back with the test) to plant one.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE queue_app_reviewitem DROP CONSTRAINT item_payload_is_object")
        cursor.execute(
            "UPDATE queue_app_reviewitem SET payload = %s::jsonb WHERE id = %s", [value, item_id]
        )
    fetched = api.get(f"/items/{item_id}")
    assert fetched.status == 200
    assert fetched.body["payload"] == exact_loads(value)
