"""The API's deadlines and subject list: clear 422s, due_at and breached, no leaks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from queue_app.models import ReviewItem
from tests.api.conftest import caller_for, intake_body, make_client
from tests.clocks.helpers import add_hold_reasons, item
from tests.conftest import make_queue

pytestmark = pytest.mark.django_db


def test_intake_takes_a_deadline_and_a_subject_key(api, queue):
    due = "2030-01-02T03:04:05Z"
    reply = api.post("/items", intake_body(due_at=due, subject_key="cust-9"))
    assert reply.status == 201, reply.body
    assert reply.body["due_at"] == "2030-01-02T03:04:05+00:00"
    assert (reply.body["breached"], reply.body["subject_key"]) == (False, "cust-9")
    stored = ReviewItem.objects.get(pk=reply.body["id"])
    assert stored.subject_key == "cust-9"
    again = api.get(f"/items/{stored.pk}")
    assert again.body["due_at"] == reply.body["due_at"]


def test_sla_seconds_and_a_past_deadline(api, queue):
    reply = api.post("/items", intake_body(key="a", sla_seconds=60))
    assert reply.status == 201 and reply.body["due_at"] is not None
    late = api.post("/items", intake_body(key="b", due_at="2020-01-01T00:00:00+01:00"))
    assert late.status == 201 and late.body["breached"] is True


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"due_at": "2030-01-01T00:00:00Z", "sla_seconds": 60}, "invalid_deadline"),
        ({"due_at": "2030-01-01T00:00:00"}, "invalid"),  # no zone
        ({"due_at": "next tuesday"}, "invalid"),
        ({"sla_seconds": 0}, "invalid"),
        ({"sla_seconds": "60"}, "invalid"),  # a string is not an integer
        ({"sla_seconds": 10**12}, "invalid"),
        ({"subject_key": ""}, "invalid"),
        ({"subject_key": "x" * 201}, "invalid"),
        ({"subject_key": "a\x00b"}, "invalid"),
    ],
)
def test_bad_deadline_or_subject_input_is_a_clear_422_with_nothing_written(
    api, queue, fields, code
):
    reply = api.post("/items", intake_body(**fields))
    assert reply.status == 422, reply.body
    assert reply.body["error"]["code"] == code
    assert reply.body["error"]["message"]
    assert not ReviewItem.objects.exists()


def test_the_subject_list_shows_only_granted_queues_newest_first(api, queue):
    secret_queue = make_queue("aml")
    older = item(queue, "k1", subject_key="cust-1")
    hidden = item(secret_queue, "a1", subject_key="cust-1")
    newer = item(queue, "k2", subject_key="cust-1", due_at=timezone.now() - timedelta(hours=1))
    item(queue, "k3", subject_key="cust-2")
    reply = api.get("/items?subject_key=cust-1")
    assert reply.status == 200
    assert [row["id"] for row in reply.body["items"]] == [newer.pk, older.pk]
    assert hidden.pk not in [row["id"] for row in reply.body["items"]]
    assert "aml" not in str(reply.body)
    assert reply.body["items"][0]["breached"] is True
    # A client granted only aml sees only aml's
    _, token = make_client("aml-robot", [secret_queue])
    other = caller_for(token).get("/items?subject_key=cust-1")
    assert [row["id"] for row in other.body["items"]] == [hidden.pk]


def test_the_subject_list_is_bounded_and_checks_its_input(api, queue):
    for i in range(5):
        item(queue, f"k{i}", subject_key="c")
    assert len(api.get("/items?subject_key=c&limit=2").body["items"]) == 2
    for query in ("", "?subject_key=", "?subject_key=c&limit=0", "?subject_key=c&limit=101"):
        reply = api.get(f"/items{query}")
        assert reply.status == 422, query
        assert reply.body["error"]["code"] == "invalid"


def test_a_client_without_scope_gets_403(queue):
    _, token = make_client("mute", [queue], intake=False, adjudicate=False)
    assert caller_for(token).get("/items?subject_key=c").status == 403


def test_evidence_replacement_through_the_api_resumes_a_hold(api, queue, alice):
    from queue_app.services import claim_next, hold_item

    add_hold_reasons(queue)
    it = item(queue, "k")
    lease = claim_next(queue=queue, reviewer=alice)
    hold_item(
        item_id=it.pk,
        reviewer=alice,
        lease_token=lease.lease_token,
        reason_code="awaiting_documents",
        hold_until=timezone.now() + timedelta(days=2),
    )
    assert api.get(f"/items/{it.pk}").body["state"] == "held"
    reply = api.put(f"/items/{it.pk}/evidence", {"payload": {"documents": 2}})
    assert reply.status == 200
    assert reply.body["state"] == "pending" and reply.body["hold_until"] is None


def test_a_leased_batch_carries_each_deadline_in_claim_order(api, queue):
    now = timezone.now()
    item(queue, "none")
    late = item(queue, "late", due_at=now + timedelta(days=2))
    soon = item(queue, "soon", due_at=now + timedelta(hours=1))
    reply = api.post(f"/queues/{queue.slug}/leases", {"batch_size": 3, "lease_seconds": 30})
    assert reply.status == 200
    rows = reply.body["items"]
    assert [row["id"] for row in rows][:2] == [soon.pk, late.pk]
    assert rows[0]["due_at"] is not None and rows[2]["due_at"] is None
