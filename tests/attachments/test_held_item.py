"""A file put on a held item ends the hold: the awaited document is what the hold waits for."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from queue_app.models import ItemEvent, ItemEventKind, ReviewItem
from queue_app.services import claim_next, hold_item
from tests.attachments.conftest import PDF_BYTES, put_file
from tests.clocks.helpers import add_hold_reasons

pytestmark = pytest.mark.django_db


def _held(queue, alice, item) -> ReviewItem:
    add_hold_reasons(queue)
    item.due_at = timezone.now() + timedelta(hours=4)
    item.save(update_fields=["due_at"])
    lease = claim_next(queue=queue, reviewer=alice)
    hold_item(
        item_id=lease.pk,
        reviewer=alice,
        lease_token=lease.lease_token,
        reason_code="awaiting_documents",
        hold_until=timezone.now() + timedelta(days=2),
    )
    return ReviewItem.objects.get(pk=item.pk)


def test_it_ends_the_hold_when_a_file_is_attached(upstream, item, queue, alice, bob):
    held = _held(queue, alice, item)
    assert held.state == "held"

    reply = put_file(upstream, item.pk, "statement.pdf", PDF_BYTES, "application/pdf")

    assert reply.status == 200, reply.body
    assert (reply.body["state"], reply.body["hold_until"]) == ("pending", None)
    back = ReviewItem.objects.get(pk=item.pk)
    assert (back.state, back.hold_until, back.hold_reason_id) == ("pending", None, None)
    # The unused part of the hold is given back: the deadline is where it was, give or take
    # the moments the test took.
    assert abs(back.due_at - (held.due_at - (held.hold_until - held.held_at))) < timedelta(
        seconds=5
    )
    put, resumed = ItemEvent.objects.filter(
        item=item, kind__in=[ItemEventKind.ATTACHMENT_PUT, ItemEventKind.RESUMED]
    ).order_by("id")
    assert (put.kind, resumed.kind, resumed.detail["cause"]) == (
        "attachment_put",
        "resumed",
        "attachment_put",
    )
    # Back in the queue for anyone, at once.
    assert claim_next(queue=queue, reviewer=bob).pk == item.pk


def test_the_same_file_again_changes_nothing_and_resumes_nothing(upstream, item, queue, alice):
    assert put_file(upstream, item.pk, "statement.pdf", PDF_BYTES).status == 200
    _held(queue, alice, item)

    reply = put_file(upstream, item.pk, "statement.pdf", PDF_BYTES)

    assert reply.status == 200
    assert reply.body["state"] == "held"
    assert not ItemEvent.objects.filter(item=item, kind=ItemEventKind.RESUMED).exists()
