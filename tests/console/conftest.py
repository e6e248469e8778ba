"""Fixtures for the reviewer console: logged-in clients and a reconciliation queue."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queue_app.models import Queue, ReviewItem
from queue_app.services import create_item
from tests.conftest import make_queue


def login(user: User) -> Client:
    """Return a test client logged in as the user, with CSRF checks on like a browser."""
    client = Client(enforce_csrf_checks=False)
    client.force_login(user)
    return client


@pytest.fixture
def alice_client(alice) -> Client:
    return login(alice)


@pytest.fixture
def bob_client(bob) -> Client:
    return login(bob)


@pytest.fixture
def outsider_client(outsider) -> Client:
    return login(outsider)


@pytest.fixture
def recon_queue(reviewers_group, queue) -> Queue:
    """A reconciliation queue (escalating to the same place as kyc) the reviewers can work."""
    return make_queue(
        "reconciliation", group=reviewers_group, escalation_queue_id=queue.escalation_queue_id
    )


def recon_item(queue: Queue, *, key: str = "r1", **payload: object) -> ReviewItem:
    """Create a reconciliation exception with exact amounts."""
    body = {
        "ledger_entity": "ACME-CORP",
        "variance_amount": Decimal("12345678901234.57"),
        "match_decision": "PARTIAL",
        "currency": "EUR",
        "ledger_amount": Decimal("0.10"),
        "bank_amount": Decimal("-1000.5"),
        "statement_date": "2026-11-03",
        **payload,
    }
    return create_item(
        queue=queue, subject=f"ACME statement {key}", payload=body, idempotency_key=key
    )[0]


@pytest.fixture
def browser_context_args(browser_context_args: dict) -> dict:
    """A laptop-sized window, the size the console is designed for."""
    return {**browser_context_args, "viewport": {"width": 1366, "height": 860}}


def browser_login(page, live_server, username: str) -> None:
    """Log in through the real login form, as a person would.

    A holder of a staff power lands on the second-factor page instead of the home page.
    """
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"pw-{username}")
    page.get_by_role("button", name="Log in").click()
    home = re.escape(f"{live_server.url}/")
    page.wait_for_url(re.compile(f"^{home}(accounts/mfa/.*)?$"))
