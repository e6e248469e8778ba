"""Fixtures for the oversight figures: a queue whose items carry machine suggestions, and a way to
write a fixed decided history with known confidences and known views.

History is written in SQL, as tests/lanes/conftest.py writes bulk checks: an item already
decided, with its suggestion, and its review decision with the view the maker had. The
decision_suggestion trigger computes suggestion_followed from the item row, and refuses an
automatic decision the queue does not allow, exactly as for the services' writes.
"""

from __future__ import annotations

import itertools
import json
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection

from queue_app.models import Decision, LaneTask, Queue
from queue_app.services import claim_lane_task, record_qa_review
from tests.conftest import make_queue

_keys = itertools.count()

# The reason code of each verdict in make_queue's set.
REASON = {"approve": "verified", "reject": "fraud", "escalate": "policy_gap"}

SHOWN_VIEWS = ("shown", "revealed_before_choice", "revealed_after_choice")


@pytest.fixture
def robot(db) -> User:
    """The screening model's service user, which takes automatic decisions."""
    return User.objects.create_user(username="screening-model")


@pytest.fixture
def carol(reviewers_group: Group) -> User:
    """A QA reviewer."""
    user = User.objects.create_user("carol", password="pw-carol")
    user.groups.add(reviewers_group)
    return user


@pytest.fixture
def screen(reviewers_group: Group, robot: User) -> Queue:
    """A queue whose suggestions at or above 0.90 are taken automatically (10 % QA)."""
    return make_queue(
        "screen",
        group=reviewers_group,
        suggestion_display="shown",
        auto_decide_above=Decimal("0.9"),
        auto_decide_user=robot,
        auto_decide_qa_rate=Decimal("10"),
    )


def decided(
    queue: Queue,
    reviewer: User,
    *,
    suggested: str | None,
    verdict: str,
    view: str | None = "shown",
    confidence: str = "0.85",
    days_ago: int = 1,
) -> Decision:
    """An item with a suggestion (none if suggested is None), decided by reviewer with the view
    it had, days_ago; returns the decision as the database recorded it."""
    key = f"hist-{next(_keys)}"
    suggestion = (
        None
        if suggested is None
        else {
            "verdict": suggested,
            "reason_code": REASON[suggested],
            "confidence": confidence,
            "model": {"name": "screening", "version": "2026.11"},
        }
    )
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH item AS (
                INSERT INTO queue_app_reviewitem
                       (queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                        idempotency_key, source_hash, trace_id, lease_count, decided_at,
                        review_round, suggestion)
                VALUES (%(queue)s, %(queue)s, 'decided', 0,
                        now() - make_interval(days => %(days)s), %(key)s, '{}', %(key)s, '',
                        gen_random_uuid(), 1, now() - make_interval(days => %(days)s), 0,
                        %(suggestion)s::jsonb)
             RETURNING id
            )
            INSERT INTO queue_app_decision
                   (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
                    created_at, chain_hash, lease_token, suggestion_view, suggestion_shown_at)
            SELECT item.id, %(queue)s, %(reviewer)s, %(verdict)s,
                   (SELECT r.id FROM queue_app_reasoncode AS r
                     WHERE r.queue_id = %(queue)s AND r.verdict = %(verdict)s
                       AND r.code = %(reason)s),
                   repeat('0', 64), '', now() - make_interval(days => %(days)s), '',
                   gen_random_uuid(), %(view)s,
                   CASE WHEN %(view)s = ANY(%(shown_views)s)
                        THEN now() - make_interval(days => %(days)s) END
              FROM item
             RETURNING id
            """,
            {
                "queue": queue.pk,
                "key": key,
                "days": days_ago,
                "suggestion": None if suggestion is None else json.dumps(suggestion),
                "reviewer": reviewer.pk,
                "verdict": verdict,
                "reason": REASON[verdict],
                "view": view,
                "shown_views": list(SHOWN_VIEWS),
            },
        )
        (decision_id,) = cursor.fetchone()
    return Decision.objects.get(pk=decision_id)


def many(
    queue: Queue,
    reviewer: User,
    n: int,
    *,
    followed: int,
    view: str,
    confidence: str = "0.85",
) -> None:
    """n decisions of reviewer with the view, the first `followed` of them agreeing with the
    suggestion (approve suggested; the rest rejected)."""
    for i in range(n):
        decided(
            queue,
            reviewer,
            suggested="approve",
            verdict="approve" if i < followed else "reject",
            view=view,
            confidence=confidence,
        )


def qa_review(decision: Decision, reviewer: User, *, verdict: str) -> None:
    """Draw the decision for blind QA and have reviewer record a verdict, through the services."""
    LaneTask.objects.create(
        kind="qa",
        queue_id=decision.queue_id,
        item_id=decision.item_id,
        decision=decision,
        maker_id=decision.reviewer_id,
        state="open",
        lease_count=0,
    )
    task = claim_lane_task(queue=decision.queue, kind="qa", user=reviewer)
    assert task is not None and task.decision_id == decision.pk
    record_qa_review(
        task_id=task.pk,
        user=reviewer,
        lease_token=task.lease_token,
        verdict=verdict,
        reason_code=REASON[verdict],
    )
