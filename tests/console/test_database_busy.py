"""A lock held elsewhere turns into clear words and a 503, not a stack trace."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from queue_app.console.views import DATABASE_BUSY
from queue_app.models import Decision
from queue_app.services import claim_next
from tests.conftest import make_items, shown_hash


@pytest.mark.django_db(transaction=True)
def test_a_lock_timeout_is_reported_in_words(settings, alice_client, alice, queue):
    settings.REVIEW_LOCK_TIMEOUT_MS = 200
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    item.refresh_from_db()
    locked, done = threading.Event(), threading.Event()

    def hold_row_lock() -> None:
        # Another session (a long admin transaction, say) holds the item's row.
        conn = connections.create_connection("default")
        try:
            conn.set_autocommit(False)
            with conn.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM queue_app_reviewitem WHERE id = %s FOR UPDATE", [item.pk]
                )
            locked.set()
            done.wait(30)
            conn.rollback()
        finally:
            conn.close()

    holder = threading.Thread(target=hold_row_lock)
    holder.start()
    try:
        assert locked.wait(30)
        response = alice_client.post(
            f"/items/{item.pk}/decide/",
            {
                "lease_token": str(item.lease_token),
                "evidence_hash": shown_hash(item),
                "verdict": "approve",
                "reason_code": "verified",
            },
        )
    finally:
        done.set()
        holder.join(30)
    assert response.status_code == 503
    assert DATABASE_BUSY in response.content.decode()
    assert not Decision.objects.exists()
    item.refresh_from_db()
    assert item.state == "leased"
