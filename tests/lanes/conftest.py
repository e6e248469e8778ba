"""Fixtures for the second-person lanes: a checked queue, makers, checkers, bulk checks."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connection

from queue_app.evidence import evidence_hash
from queue_app.models import CheckPolicy, Decision, LaneOutcome, LaneTask, Queue, ReviewItem
from queue_app.services import (
    claim_lane_task,
    claim_next,
    confirm_check,
    create_item,
    submit_decision,
)
from tests.conftest import make_queue, shown_hash
from tests.worker.conftest import ledger  # noqa: F401 (the ledger effect's table, a fixture)


@pytest.fixture
def checked_queue(reviewers_group: Group) -> Queue:
    """A reconciliation queue: write-offs (approve) at or above 1000.00 need a check."""
    queue = make_queue("recon", group=reviewers_group, lease_ttl=timedelta(minutes=5))
    CheckPolicy.objects.create(
        queue=queue, verdict="approve", path="variance_amount", threshold=Decimal("1000.00")
    )
    return queue


@pytest.fixture
def carol(reviewers_group: Group) -> User:
    """A third reviewer: the checker or QA reviewer in these tests."""
    user = User.objects.create_user("carol", password="pw-carol")
    user.groups.add(reviewers_group)
    return user


@pytest.fixture
def adjudicator(reviewers_group: Group) -> User:
    user = User.objects.create_user("dana", password="pw-dana", is_staff=True)
    user.groups.add(reviewers_group)
    user.user_permissions.add(Permission.objects.get(codename="can_overturn"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def held(checked_queue: Queue, alice: User, carol: User) -> LaneTask:
    """A check of alice's decision, leased to carol."""
    decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    assert task is not None
    return task


def new_item(queue: Queue, key: str, **payload: Any) -> ReviewItem:
    return create_item(
        queue=queue,
        subject=f"Case {key}",
        payload=payload or {"variance_amount": "1500.00"},
        idempotency_key=key,
        source_hash=key,
    )[0]


def decide_one(
    queue: Queue,
    maker: User,
    *,
    verdict: str = "approve",
    reason: str = "verified",
    note: str = "",
    **payload: Any,
) -> Decision:
    """Create an item and decide it as the maker, through the console's services."""
    item = new_item(queue, f"k{ReviewItem.objects.count()}", **payload)
    leased = claim_next(queue=queue, reviewer=maker)
    assert leased is not None and leased.pk == item.pk
    return submit_decision(
        item_id=leased.pk,
        reviewer=maker,
        lease_token=leased.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(leased),
        note=note,
    )


def confirm_one(queue: Queue, maker: User, checker: User) -> LaneOutcome:
    """A decision of the maker's that needs a check, confirmed by the checker."""
    decision = decide_one(queue, maker)
    task = claim_lane_task(queue=queue, kind="check", user=checker)
    assert task is not None and task.decision_id == decision.pk
    return confirm_check(task_id=task.pk, user=checker, lease_token=task.lease_token)


BULK_SUBJECT = "Bulk case"
BULK_PAYLOAD: dict[str, Any] = {}


def bulk_checks(queue: Queue, maker: User, n: int) -> None:
    """n items awaiting their check, written in one statement (for load and concurrency tests).

    The shape the services leave: the item awaiting its check, the maker's decision with no
    effect job, an open check task carrying its item's deadline. Every other item has one,
    spread over four days, so the lane's order is by deadline, then age, with none last.
    """
    reason = queue.reason_codes.get(verdict="approve", code="verified")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH items AS (
                INSERT INTO queue_app_reviewitem
                       (queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                        idempotency_key, source_hash, trace_id, lease_count, decided_at,
                        review_round, due_at)
                SELECT %(queue)s, %(queue)s, 'awaiting_check', 0, now(), %(subject)s, '{}',
                       'bulk-' || g || '-' || gen_random_uuid(), '', gen_random_uuid(), 1, now(),
                       0, CASE WHEN g %% 2 = 0 THEN now() + (g %% 97) * interval '1 hour' END
                  FROM generate_series(1, %(n)s) AS g
             RETURNING id, queue_id, due_at
            ), decisions AS (
                INSERT INTO queue_app_decision
                       (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash,
                        note, created_at, chain_hash, lease_token)
                SELECT id, queue_id, %(maker)s, 'approve', %(reason)s, %(hash)s, '', now(), '',
                       gen_random_uuid()
                  FROM items
             RETURNING id, item_id, queue_id, reviewer_id
            )
            INSERT INTO queue_app_lanetask
                   (kind, queue_id, item_id, decision_id, maker_id, state, lease_count, due_at,
                    created_at)
            SELECT 'check', d.queue_id, d.item_id, d.id, d.reviewer_id, 'open', 0, i.due_at,
                   clock_timestamp()
              FROM decisions AS d JOIN items AS i ON i.id = d.item_id
            """,
            {
                "queue": queue.pk,
                "subject": BULK_SUBJECT,
                "n": n,
                "maker": maker.pk,
                "reason": reason.pk,
                "hash": evidence_hash(subject=BULK_SUBJECT, payload=BULK_PAYLOAD),
            },
        )


def open_task(decision: Decision, kind: str = "check") -> LaneTask:
    return LaneTask.objects.get(decision=decision, kind=kind)
