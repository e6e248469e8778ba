"""Verify the decisions' hash chain (the trigger in migration 0002 writes it)."""

from __future__ import annotations

from django.db import connection

from queue_app import sql
from queue_app.models import ChainVerification


def verify_chain() -> ChainVerification:
    """Recompute every link in the database, record the outcome, and return it."""
    with connection.cursor() as cursor:
        cursor.execute(sql.COUNT_DECISIONS)
        checked = cursor.fetchone()[0]
        cursor.execute(sql.VERIFY_CHAIN)
        broken = cursor.fetchone()
    if broken is None:
        return ChainVerification.objects.create(
            ok=True,
            checked=checked,
            message=f"Decision chain verified: {checked} decisions intact.",
        )
    decision_id, seq, _stored, _expected = broken
    return ChainVerification.objects.create(
        ok=False,
        checked=checked,
        first_broken_id=decision_id,
        message=(
            f"Decision chain broken at decision {decision_id} (chain position {seq}): its stored "
            "hash does not match its contents and predecessor. The row, or the one before it, "
            "was altered outside the application."
        ),
    )
