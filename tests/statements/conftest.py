"""A content-moderation queue whose rejections restrict someone, with its statement policy."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from queue_app.models import Decision, Queue, ReasonCode, ReasonMapping, ReviewItem, StatementPolicy
from queue_app.services import claim_next, create_item, submit_decision
from tests.conftest import make_queue, shown_hash

REMOVED = "DECISION_VISIBILITY_CONTENT_REMOVED"


def give_policy(queue: Queue, **fields: Any) -> StatementPolicy:
    """A policy: a rejection removes the content, in Germany and France, text."""
    values: dict[str, Any] = {
        "decision_visibility": [REMOVED],
        "territorial_scope": ["DE", "FR"],
        "content_type": ["CONTENT_TYPE_TEXT"],
        **fields,
    }
    return StatementPolicy.objects.create(queue=queue, **values)


def map_reason(queue: Queue, code: str, **fields: Any) -> ReasonMapping:
    values: dict[str, Any] = {
        "decision_ground": "DECISION_GROUND_INCOMPATIBLE_CONTENT",
        "ground": "Terms of service, section 4 (fraud)",
        "reference_url": "https://platform.example/terms#fraud",
        "category": "STATEMENT_CATEGORY_SCAMS_AND_FRAUD",
        "keywords": ["KEYWORD_PHISHING"],
        "explanation_template": "Removed under our rule on {reason}. {note}",
        **fields,
    }
    reason = ReasonCode.objects.get(queue=queue, code=code)
    return ReasonMapping.objects.create(queue=queue, reason_code=reason, **values)


@pytest.fixture
def posts(reviewers_group: Group) -> Queue:
    """Content moderation: a rejection (fraud) removes a post; overturns are mapped too."""
    queue = make_queue("posts", group=reviewers_group)
    give_policy(queue)
    map_reason(queue, "fraud")
    map_reason(queue, "reviewer_error", explanation_template="Corrected on review: {note}")
    return queue


@pytest.fixture
def carol(reviewers_group: Group) -> User:
    """A checker."""
    user = User.objects.create_user("carol", password="pw-carol")
    user.groups.add(reviewers_group)
    return user


def decide(
    queue: Queue,
    reviewer: User,
    *,
    verdict: str = "reject",
    reason: str = "fraud",
    note: str = "",
    subject: str | None = None,
    payload: dict[str, Any] | None = None,
    subject_key: str | None = None,
    client: Any = None,
) -> Decision:
    """Create an item and decide it through the console's services."""
    key = f"k{ReviewItem.objects.count()}"
    item, _ = create_item(
        queue=queue,
        subject=subject or f"Post {key}",
        payload=payload if payload is not None else {"text": "Send me your bank password"},
        idempotency_key=key,
        source_hash=key,
        subject_key=subject_key,
        client=client,
    )
    leased = claim_next(queue=queue, reviewer=reviewer)
    assert leased is not None and leased.pk == item.pk
    return submit_decision(
        item_id=leased.pk,
        reviewer=reviewer,
        lease_token=leased.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(leased),
        note=note,
    )
