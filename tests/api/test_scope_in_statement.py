"""An API client's revocation or lost scope stops its next claim, decision or intake write.

The API checks scope and grant against the client it loaded when the request began. The
statements that claim, hold and decide read the client again (access_sql._MAY_REVIEW), and so do the
intake services inside the transaction that writes (access_sql.MAY_SEND_EVIDENCE), so a client
revoked or stripped of its scope between those checks and the write gets nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from queue_app.api import adjudication
from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import leases as leases_sql
from queue_app.errors import NotPermitted
from queue_app.models import ApiClient, Decision, ItemEvent, ReviewItem
from queue_app.services import claim_batch
from tests.api.conftest import caller_for, make_client
from tests.conftest import approve_as_shown, make_items

pytestmark = pytest.mark.django_db


def _take_scope_after_the_checks(monkeypatch, client: ApiClient) -> None:
    """Take the client's adjudicate scope once the endpoint has checked it (its queue lookup
    is the last thing it does before it claims)."""
    granted_queue = adjudication.granted_queue

    def then_take_scope(*args, **kwargs):
        queue = granted_queue(*args, **kwargs)
        ApiClient.objects.filter(pk=client.pk).update(can_adjudicate=False)
        return queue

    monkeypatch.setattr(adjudication, "granted_queue", then_take_scope)


def test_a_batch_claim_after_the_scope_was_taken_leases_nothing(monkeypatch, queue):
    make_items(queue, 3)
    client, token = make_client("robot", [queue])
    _take_scope_after_the_checks(monkeypatch, client)
    reply = caller_for(token).post("/queues/kyc/leases", {"batch_size": 3})
    assert reply.status == 403, reply.body
    assert not ReviewItem.objects.filter(state="leased").exists()


def test_the_claim_statement_leases_nothing_to_a_revoked_client(queue):
    make_items(queue, 2)
    client, _ = make_client("robot", [queue])
    params = {
        "queue_id": queue.pk,
        "owner_id": client.user_id,
        "limit": 2,
        "ttl": timedelta(minutes=1),
        "max_leases": 3,
        "release_skip": timedelta(0),
    }
    ApiClient.objects.filter(pk=client.pk).update(can_adjudicate=False)
    assert fetch_dicts(leases_sql.CLAIM_ITEMS, params) == []
    ApiClient.objects.filter(pk=client.pk).update(can_adjudicate=True, revoked_at=timezone.now())
    assert fetch_dicts(leases_sql.CLAIM_ITEMS, params) == []
    ApiClient.objects.filter(pk=client.pk).update(revoked_at=None)
    assert len(fetch_dicts(leases_sql.CLAIM_ITEMS, params)) == 2


def test_a_batch_claim_without_access_says_so(queue):
    make_items(queue, 1)
    client, _ = make_client("robot", [queue])
    ApiClient.objects.filter(pk=client.pk).update(can_adjudicate=False)
    with pytest.raises(NotPermitted, match="do not have access"):
        claim_batch(queue=queue, worker=client.user, n=1, ttl=timedelta(minutes=1))


def test_a_client_that_lost_its_scope_after_leasing_cannot_decide(queue):
    make_items(queue, 1)
    client, _ = make_client("robot", [queue])
    (item,) = claim_batch(queue=queue, worker=client.user, n=1, ttl=timedelta(minutes=1))
    ApiClient.objects.filter(pk=client.pk).update(can_adjudicate=False)

    with pytest.raises(NotPermitted):
        approve_as_shown(item, client.user)
    assert not Decision.objects.exists()
    ApiClient.objects.filter(pk=client.pk).update(can_adjudicate=True)
    assert approve_as_shown(item, client.user).reviewer_id == client.user_id


def test_an_intake_only_client_still_reads_its_subjects_items(queue):
    from queue_app.services import create_item

    create_item(
        queue=queue,
        subject="Payment 1",
        payload={"n": 1},
        idempotency_key="k1",
        source_hash="h1",
        subject_key="cust-9",
    )
    _, token = make_client("feeder", [queue], intake=True, adjudicate=False)
    reply = caller_for(token).get("/items?subject_key=cust-9")
    assert reply.status == 200, reply.body
    assert len(reply.body["items"]) == 1


# -- intake: creating an item, replacing its evidence, attaching a file ----------------------


def _revoke_after(monkeypatch, module, name: str, client: ApiClient, **change) -> None:
    """Change the client once the endpoint has called module.name (its last check)."""
    checked = getattr(module, name)

    def then_change(*args, **kwargs):
        result = checked(*args, **kwargs)
        ApiClient.objects.filter(pk=client.pk).update(**change)
        return result

    monkeypatch.setattr(module, name, then_change)


@pytest.mark.parametrize("lost", ["scope", "revoked"])
def test_an_item_sent_after_the_client_lost_intake_is_not_created(monkeypatch, queue, lost):
    from queue_app.api import intake_endpoints
    from tests.api.conftest import intake_body

    change = {"can_intake": False} if lost == "scope" else {"revoked_at": timezone.now()}
    client, token = make_client("feeder", [queue])
    _revoke_after(monkeypatch, intake_endpoints, "require_queue", client, **change)
    reply = caller_for(token).post("/items", intake_body())
    assert reply.status == 403, reply.body
    assert "Nothing was written" in reply.body["error"]["message"]
    assert not ReviewItem.objects.exists()


def test_evidence_sent_after_the_client_lost_intake_is_not_written(monkeypatch, queue):
    from queue_app.api import intake_endpoints

    (item,) = make_items(queue, 1)
    client, token = make_client("feeder", [queue])
    _revoke_after(monkeypatch, intake_endpoints, "visible_item", client, can_intake=False)
    reply = caller_for(token).put(f"/items/{item.pk}/evidence", {"payload": {"n": 99}})
    assert reply.status == 403, reply.body
    item.refresh_from_db()
    assert item.payload == {"n": 0, "amount": "12.50"}
    assert not ItemEvent.objects.filter(item=item, kind="evidence_replaced").exists()


def test_a_file_sent_after_the_client_lost_intake_is_not_attached(monkeypatch, queue):
    from queue_app.api import attachment_endpoints
    from tests.attachments.conftest import image_bytes, put_file

    (item,) = make_items(queue, 1)
    client, token = make_client("feeder", [queue])
    _revoke_after(
        monkeypatch, attachment_endpoints, "visible_item", client, revoked_at=timezone.now()
    )
    reply = put_file(caller_for(token), item.pk, "id.png", image_bytes())
    assert reply.status == 403, reply.body
    item.refresh_from_db()
    assert item.attachments in ({}, None)


def test_a_console_user_still_attaches_and_replaces_evidence(queue, alice):
    from queue_app.services import put_attachment, replace_evidence
    from tests.attachments.conftest import image_bytes

    (item,) = make_items(queue, 1)
    assert replace_evidence(item_id=item.pk, actor=alice, payload={"n": 5}).payload == {"n": 5}
    updated = put_attachment(item_id=item.pk, actor=alice, name="id.png", data=image_bytes())
    assert "id.png" in updated.attachments
