"""An attachment's way in and out: put by upstream, covered by the evidence hash, served back."""

from __future__ import annotations

import hashlib

import pytest

from queue_app.errors import EvidenceChanged
from queue_app.evidence import evidence_hash, item_evidence_hash
from queue_app.models import ItemEvent, ItemEventKind, ReviewItem
from queue_app.services import claim_next, submit_decision
from tests.attachments.conftest import PDF_BYTES, image_bytes, put_file
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


def test_it_keeps_hashes_of_items_without_attachments_unchanged():
    # The hash of a payload-only item is what it was before attachments existed: forms open
    # and decisions recorded before the upgrade stay valid. The value is pinned, not derived.
    assert (
        evidence_hash(subject="Payment 42", payload={"amount": "12.50"}, attachments={})
        == evidence_hash(subject="Payment 42", payload={"amount": "12.50"})
        == hashlib.sha256(b'{"payload":{"amount":"12.50"},"subject":"Payment 42"}').hexdigest()
    )


def test_it_round_trips_an_image_and_refuses_a_decision_over_older_evidence(
    upstream, item, alice, queue
):
    claimed = claim_next(queue=queue, reviewer=alice)
    assert claimed.pk == item.pk
    page = login(alice).get(f"/items/{item.pk}/")
    shown = page.context["shown_hash"]
    assert shown == evidence_hash(subject=item.subject, payload=item.payload)

    reply = put_file(upstream, item.pk, "id-front", image_bytes("PNG"))

    assert reply.status == 200, reply.body
    [attachment] = reply.body["attachments"]
    assert attachment["name"] == "id-front"
    assert attachment["content_type"] == "image/png"
    assert reply.body["evidence_hash"] != shown
    stored = ReviewItem.objects.get(pk=item.pk)
    assert reply.body["evidence_hash"] == item_evidence_hash(stored)
    event = ItemEvent.objects.get(item=item, kind=ItemEventKind.ATTACHMENT_PUT)
    assert event.detail["previous_evidence_hash"] == shown
    assert event.detail["sha256"] == attachment["sha256"]

    # The reviewer still looks at the page without the image: their submit is refused and
    # nothing is written.
    with pytest.raises(EvidenceChanged):
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=claimed.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown,
        )
    assert ReviewItem.objects.get(pk=item.pk).state == "leased"

    # Reloaded, the page shows the image and carries the new hash; that decision stands.
    client = login(alice)
    page = client.get(f"/items/{item.pk}/")
    assert page.context["shown_hash"] == reply.body["evidence_hash"]
    served = client.get(page.context["attachments"][0].url)
    assert served.status_code == 200
    body = b"".join(served.streaming_content)
    assert hashlib.sha256(body).hexdigest() == attachment["sha256"]
    decision = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=page.context["shown_hash"],
    )
    assert decision.evidence_hash == reply.body["evidence_hash"]


def test_the_console_says_evidence_changed_when_a_file_is_replaced(upstream, item, alice, queue):
    put_file(upstream, item.pk, "selfie", image_bytes("JPEG", color="green"), "image/jpeg")
    claimed = claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    shown = client.get(f"/items/{item.pk}/").context["shown_hash"]

    replaced = put_file(
        upstream, item.pk, "selfie", image_bytes("JPEG", color="navy"), "image/jpeg"
    )
    assert replaced.status == 200

    response = client.post(
        f"/items/{item.pk}/decide/",
        {
            "lease_token": str(claimed.lease_token),
            "evidence_hash": shown,
            "verdict": "approve",
            "reason_code": "verified",
        },
        follow=True,
    )
    assert EvidenceChanged.message in response.content.decode()
    assert not item.decisions.exists()


def test_the_same_bytes_again_change_nothing(upstream, item):
    first = put_file(upstream, item.pk, "statement", PDF_BYTES, "application/pdf")
    again = put_file(upstream, item.pk, "statement", PDF_BYTES, "application/pdf")
    assert again.status == 200
    assert again.body["evidence_hash"] == first.body["evidence_hash"]
    assert ItemEvent.objects.filter(item=item, kind=ItemEventKind.ATTACHMENT_PUT).count() == 1


def test_it_refuses_a_file_on_a_decided_item(upstream, item, alice, queue):
    claimed = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=item_evidence_hash(claimed),
    )
    reply = put_file(upstream, item.pk, "late", image_bytes())
    assert reply.status == 409
    assert reply.body["error"]["code"] == "already_decided"
    assert ReviewItem.objects.get(pk=item.pk).attachments == {}


def test_the_api_lists_attachments_with_their_digests(upstream, item):
    put_file(upstream, item.pk, "b-doc", PDF_BYTES, "application/pdf")
    put_file(upstream, item.pk, "a-photo", image_bytes("WEBP"), "image/webp")
    reply = upstream.get(f"/items/{item.pk}")
    assert [(a["name"], a["content_type"]) for a in reply.body["attachments"]] == [
        ("a-photo", "image/webp"),
        ("b-doc", "application/pdf"),
    ]
    assert reply.body["attachments"][1]["sha256"] == hashlib.sha256(PDF_BYTES).hexdigest()
