"""The case view in a browser: the item page and the three lane pages, each set up as a person
meets it (a lease or a lane task in hand), at the three window sizes the console is built for."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page

from queue_app.models import EvidenceRule, Queue
from queue_app.services import claim_lane_task, claim_next, create_item, record_qa_review
from tests.console.conftest import browser_login
from tests.identity.browser_steps import enrol_second_factor
from tests.lanes.conftest import adjudicator, carol, checked_queue, decide_one  # noqa: F401

VIEWPORTS = {
    "phone": {"width": 390, "height": 844},
    "laptop": {"width": 1366, "height": 768},
    "desktop": {"width": 1920, "height": 1080},
}
CASE_PAGES = ("item", "check", "qa", "adjudication")

# Evidence as long and as nested as a real case: the decision is far below it on a phone.
PAYLOAD: dict[str, Any] = {
    "customer": {
        "name": "Józefina Przybyszewska-Wojciechowska",
        "address": "Flat 12, 1400 Very Long Street Name Boulevard, Kraków 31-000, Poland",
        "iban": "PL61109010140000071219812874",
        "documents": [{"kind": "passport", "number": "ZX1234567", "expires": "2020-01-31"}],
    },
    "document_expires": "2020-01-31",
    "variance_amount": Decimal("1500.00"),
    "risk_notes": "A long free-text note from the upstream system " * 6,
    **{f"field_{n}": f"value number {n} with some words" for n in range(12)},
}


def _case_item(queue: Queue, key: str):
    return create_item(
        queue=queue, subject=f"Case {key}", payload=PAYLOAD, idempotency_key=key, source_hash=key
    )[0]


def open_case_page(
    kind: str, page: Page, live_server: Any, *, queue: Queue, checked: Queue, users: dict
) -> str:
    """Put a case page of this kind in a person's hands and open it; return its URL."""
    EvidenceRule.objects.create(
        queue=queue if kind in ("item", "qa", "adjudication") else checked,
        path="document_expires",
        test="date_past",
        message="Document expired",
    )
    if kind == "item":
        item = _case_item(queue, "item-1")
        claim_next(queue=queue, reviewer=users["alice"])
        browser_login(page, live_server, "alice")
        url = f"{live_server.url}/items/{item.pk}/"
    elif kind == "check":
        decide_one(checked, users["alice"], **PAYLOAD)
        task = claim_lane_task(queue=checked, kind="check", user=users["carol"])
        browser_login(page, live_server, "carol")
        url = f"{live_server.url}/lanes/{task.pk}/"
    else:
        queue.qa_rate = 100
        queue.save(update_fields=["qa_rate"])
        decide_one(queue, users["bob"], **PAYLOAD)
        task = claim_lane_task(queue=queue, kind="qa", user=users["carol"])
        if kind == "qa":
            browser_login(page, live_server, "carol")
        else:
            record_qa_review(
                task_id=task.pk,
                user=users["carol"],
                lease_token=task.lease_token,
                verdict="reject",
                reason_code="fraud",
            )
            task = claim_lane_task(queue=queue, kind="adjudication", user=users["dana"])
            browser_login(page, live_server, "dana")
            enrol_second_factor(page)  # an adjudication can overturn: a staff power
        url = f"{live_server.url}/lanes/{task.pk}/"
    page.goto(url)
    return url


# What a reviewer acts with on each page: the verdicts, or Confirm on a check.
DECISION_CONTROL = {
    "item": "#verdict-group .verdict-buttons",
    "check": "#confirm-button",
    "qa": "#qa-form .verdict-buttons",
    "adjudication": "#adjudicate-form .verdict-buttons",
}


@pytest.fixture
def case_users(alice: User, bob: User, carol: User, adjudicator: User) -> dict:  # noqa: F811
    return {"alice": alice, "bob": bob, "carol": carol, "dana": adjudicator}


ITEM_URL = re.compile(r".*/items/(\d+)/$")
