"""Queues that decide automatically, and items that carry a suggestion."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from queue_app.admin.permissions import admin_group_permissions
from queue_app.models import AutomationSwitch, Queue, ReviewItem
from queue_app.services import create_item

_keys = iter(range(10**9))


def suggestion(
    verdict: str = "approve", confidence: str = "0.95", reason_code: str | None = None
) -> dict[str, Any]:
    """A suggestion the test queues accept (tests/conftest.py REASONS)."""
    code = (
        reason_code or {"approve": "verified", "reject": "fraud", "escalate": "policy_gap"}[verdict]
    )
    return {
        "verdict": verdict,
        "reason_code": code,
        "confidence": confidence,
        "model": {"name": "risk-model", "version": "7"},
        "explanation": [{"factor": "document_match", "value": "0.99"}],
    }


def arrive(queue: Queue, sugg: dict[str, Any] | None = None, **fields: Any) -> ReviewItem:
    """An item arriving in the queue with the suggestion (none: a plain item)."""
    n = next(_keys)
    item, created = create_item(
        queue=queue,
        subject=f"applicant {n}",
        payload=fields.pop("payload", {"n": n, "amount": "12.50"}),
        idempotency_key=f"auto-{n}",
        suggestion=sugg,
        **fields,
    )
    assert created
    return item


@pytest.fixture(autouse=True)
def _switch_row(db) -> None:
    """The global switch's one row, made by the migration: a transactional test's flush drops it."""
    AutomationSwitch.objects.get_or_create(pk=1)


@pytest.fixture
def machine(db) -> User:
    """The service user automatic decisions are recorded under."""
    return User.objects.create_user(username="risk-model", password="unused")


def automate(queue: Queue, user: User, *, above: str = "0.90", qa_rate: str = "5") -> Queue:
    """Let the queue decide suggestions at or above the threshold, as the user."""
    queue.auto_decide_above = Decimal(above)
    queue.auto_decide_user = user
    queue.auto_decide_qa_rate = Decimal(qa_rate)
    queue.save()
    return queue


@pytest.fixture
def compliance(db) -> User:
    """Staff in the Admins group, with the permissions seed_demo gives it (the stop among them)."""
    group = Group.objects.create(name="Admins")
    group.permissions.set(admin_group_permissions())
    user = User.objects.create_user("casey", password="pw-casey", is_staff=True)
    user.groups.add(group)
    return user


@pytest.fixture
def auto_queue(queue, machine) -> Queue:
    """The kyc queue, deciding at confidence 0.90 and above, 5 % of them drawn for QA."""
    return automate(queue, machine)
