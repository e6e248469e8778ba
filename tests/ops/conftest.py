"""Fixtures for the operations tests: an operator persona and honest ways to age the data.

Ageing rules: item rows are working state and may be updated directly. Decisions and item
events are append-only (the database refuses UPDATE), so a past claim is written as what a
claim N seconds ago would have left behind (a leased row plus its 'claimed' event, inserted),
and the one helper that must move a decision back in time says why it switches triggers off.
"""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from queue_app.models import Decision, ReviewItem
from queue_app.services import submit_decision
from tests.conftest import shown_hash


@pytest.fixture
def operator(db) -> User:
    """Staff who watch /ops/ (not a superuser, no queue access)."""
    return User.objects.create_user(username="olga", password="pw-olga", is_staff=True)


def lease_as_if_claimed(item: ReviewItem, reviewer: User, *, seconds_ago: float) -> uuid.UUID:
    """Put the item under the reviewer's lease as if they had claimed it seconds_ago."""
    token = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET state = 'leased', lease_owner_id = %s, "
            "lease_token = %s, lease_expires = now() + interval '1 hour', "
            "lease_count = lease_count + 1 WHERE id = %s",
            [reviewer.pk, token, item.pk],
        )
        cursor.execute(
            "INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail) "
            "VALUES (%s, 'claimed', %s, now() - make_interval(secs => %s), '{}')",
            [item.pk, reviewer.pk, seconds_ago],
        )
    return token


def decide_after(
    item: ReviewItem,
    reviewer: User,
    *,
    seconds: float,
    verdict: str = "approve",
    reason: str = "verified",
) -> Decision:
    """Decide the item through the service, seconds after its (backdated) claim."""
    token = lease_as_if_claimed(item, reviewer, seconds_ago=seconds)
    return submit_decision(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(item),
    )


def backdate_outcome(task_id: int, *, seconds: int) -> None:
    """Move a second-person outcome seconds into the past (append-only: replica mode, as below)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE queue_app_laneoutcome SET created_at = created_at - make_interval(secs => %s)"
            " WHERE task_id = %s",
            [seconds, task_id],
        )
        # The check tally counts a check in its day (the trigger's work): move it along.
        day = "date_trunc('day', o.created_at{}, 'UTC')"
        cursor.execute(
            f"""
            UPDATE queue_app_checktally AS c SET checks = c.checks - 1
              FROM queue_app_laneoutcome AS o JOIN queue_app_lanetask AS k ON k.id = o.task_id
             WHERE o.task_id = %s AND o.kind = 'check' AND c.queue_id = k.queue_id
               AND c.result = o.result AND c.checker_id = o.actor_id
               AND c.day = {day.format(" + make_interval(secs => %s)")}
            """,
            [task_id, seconds],
        )
        cursor.execute(
            f"""
            INSERT INTO queue_app_checktally AS c (day, queue_id, result, checker_id, checks)
            SELECT {day.format("")}, k.queue_id, o.result, o.actor_id, 1
              FROM queue_app_laneoutcome AS o JOIN queue_app_lanetask AS k ON k.id = o.task_id
             WHERE o.task_id = %s AND o.kind = 'check'
            ON CONFLICT (day, queue_id, result, checker_id) DO UPDATE SET checks = c.checks + 1
            """,
            [task_id],
        )
        cursor.execute("SET LOCAL session_replication_role = origin")


def backdate_decision(decision: Decision, *, seconds: int) -> None:
    """Move a decision, its effect job and its item's history seconds into the past.

    Decisions and item events are append-only and their triggers refuse this UPDATE; replica
    mode turns user triggers off for this one transaction, the only honest way to make a
    decision look old without waiting for it. Test-only: the application never does this.
    """
    shift = "make_interval(secs => %s)"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            f"UPDATE queue_app_decision SET created_at = created_at - {shift} WHERE id = %s",
            [seconds, decision.pk],
        )
        cursor.execute(
            f"UPDATE queue_app_effectjob SET created_at = created_at - {shift} "
            "WHERE decision_id = %s",
            [seconds, decision.pk],
        )
        cursor.execute(
            f"UPDATE queue_app_itemevent SET at = at - {shift} WHERE item_id = %s",
            [seconds, decision.item_id],
        )
        cursor.execute(
            f"UPDATE queue_app_reviewitem SET decided_at = decided_at - {shift}, "
            f"created_at = created_at - {shift} WHERE id = %s",
            [seconds, seconds, decision.item_id],
        )
        # My work's tally counts the decision in its day (the trigger's work): move it along.
        cursor.execute(
            f"""
            UPDATE queue_app_decisiontally AS t SET decisions = t.decisions - 1
              FROM queue_app_decision AS d
             WHERE d.id = %s AND t.reviewer_id = d.reviewer_id AND t.queue_id = d.queue_id
               AND t.verdict = d.verdict
               AND t.day = date_trunc('day', d.created_at + {shift}, 'UTC')
            """,
            [decision.pk, seconds],
        )
        cursor.execute(
            """
            INSERT INTO queue_app_decisiontally AS t
                   (reviewer_id, day, queue_id, verdict, decisions)
            SELECT reviewer_id, date_trunc('day', created_at, 'UTC'), queue_id, verdict, 1
              FROM queue_app_decision WHERE id = %s
            ON CONFLICT (reviewer_id, day, queue_id, verdict)
            DO UPDATE SET decisions = t.decisions + 1
            """,
            [decision.pk],
        )
        cursor.execute("SET LOCAL session_replication_role = origin")


def age_item(item: ReviewItem, *, seconds: int) -> None:
    """Make an item look as if it arrived seconds ago."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET created_at = now() - make_interval(secs => %s) "
            "WHERE id = %s",
            [seconds, item.pk],
        )


def mark_applied(decision: Decision) -> None:
    """Record the decision as carried out, the way the apply worker does."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO queue_app_applieddecision (decision_id, applied_at, outcome) "
            "VALUES (%s, now(), '{}')",
            [decision.pk],
        )
        cursor.execute(
            "UPDATE queue_app_effectjob SET done_at = now() WHERE decision_id = %s", [decision.pk]
        )


def mark_dead(decision: Decision, *, error: str = "webhook answered 500") -> None:
    """Make the decision's effect job give up, as after its last retry."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_effectjob SET dead = true, attempts = 8, last_error = %s "
            "WHERE decision_id = %s",
            [error, decision.pk],
        )
