"""Fixtures for machine suggestions: the API's callers, and items that carry a suggestion."""

from __future__ import annotations

import re

from queue_app.models import Queue, ReviewItem
from queue_app.services import create_item
from tests.api.conftest import anonymous, api, robot_client

__all__ = ["anonymous", "api", "robot_client"]


def suggested_item(
    queue: Queue,
    key: str,
    *,
    verdict: str = "reject",
    reason: str = "fraud",
    confidence: str = "0.93",
) -> ReviewItem:
    """Create an item that arrives with a machine suggestion (and its explanation)."""
    return create_item(
        queue=queue,
        subject=f"Payment {key}",
        payload={"amount": "1250.00", "country": "NL"},
        idempotency_key=key,
        suggestion={
            "verdict": verdict,
            "reason_code": reason,
            "confidence": confidence,
            "model": {"name": "fraud-score", "version": "2026.11"},
            "explanation": [
                {"factor": "ip_country_mismatch", "value": True},
                {"factor": "velocity_24h", "value": 7},
            ],
        },
    )[0]


def seen_field(html: str) -> str:
    """The signed record of what the page showed, as its decision form carries it ("": none)."""
    found = re.search(r'name="suggestion_seen" id="suggestion-seen" value="([^"]*)"', html)
    return found.group(1) if found else ""
