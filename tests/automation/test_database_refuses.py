"""The database, not the service, decides what an automatic decision may be."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction

from queue_app.models import AutomationSwitch, Decision, ReasonCode
from tests.automation.conftest import arrive, automate, suggestion

pytestmark = pytest.mark.django_db


def _insert_automatic(item, *, reviewer_id: int, verdict: str, code: str) -> None:
    """Write an automatic decision by hand, as a writer that skipped the service would."""
    reason = ReasonCode.objects.get(queue_id=item.queue_id, verdict=verdict, code=code)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_decision
                   (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
                    created_at, chain_hash, suggestion_view)
            VALUES (%s, %s, %s, %s, %s, %s, '', now(), '', 'automatic')
            """,
            [item.pk, item.queue_id, reviewer_id, verdict, reason.pk, item.evidence_hash],
        )


@pytest.fixture
def waiting(queue, machine):
    """An item suggested approve at 0.95, arrived before the queue decided automatically."""
    item = arrive(queue, suggestion("approve", "0.95"))
    automate(queue, machine, above="0.90")
    return item


def _refused(item, **kwargs) -> str:
    with pytest.raises(IntegrityError) as caught, transaction.atomic():
        _insert_automatic(item, **kwargs)
    assert not Decision.objects.filter(item=item).exists()
    return str(caught.value)


def test_it_accepts_the_suggestion_by_the_automation_user(waiting, machine):
    # The control: what the tests below change one thing of is accepted.
    _insert_automatic(waiting, reviewer_id=machine.pk, verdict="approve", code="verified")

    decision = Decision.objects.get(item=waiting)
    assert decision.suggestion_view == "automatic"
    assert decision.suggestion_followed is True


def test_it_refuses_another_user(waiting, alice):
    assert "not an automatic decision" in _refused(
        waiting, reviewer_id=alice.pk, verdict="approve", code="verified"
    )


def test_it_refuses_another_verdict_than_the_suggested_one(waiting, machine):
    assert "not an automatic decision" in _refused(
        waiting, reviewer_id=machine.pk, verdict="reject", code="fraud"
    )


def test_it_refuses_a_confidence_below_the_threshold(waiting, queue, machine):
    queue.auto_decide_above = Decimal("0.9501")
    queue.save()

    assert "not an automatic decision" in _refused(
        waiting, reviewer_id=machine.pk, verdict="approve", code="verified"
    )


def test_it_refuses_a_queue_without_a_threshold(waiting, queue, machine):
    queue.auto_decide_above = None
    queue.save()

    assert "not an automatic decision" in _refused(
        waiting, reviewer_id=machine.pk, verdict="approve", code="verified"
    )


def test_it_refuses_when_the_queue_is_stopped(waiting, queue, machine):
    queue.automation_stopped_at = _now()
    queue.save()

    assert "automatic decisions are stopped" in _refused(
        waiting, reviewer_id=machine.pk, verdict="approve", code="verified"
    )


def test_it_refuses_when_every_queue_is_stopped(waiting, machine):
    AutomationSwitch.objects.filter(pk=1).update(stopped_at=_now())

    assert "automatic decisions are stopped" in _refused(
        waiting, reviewer_id=machine.pk, verdict="approve", code="verified"
    )


def test_it_refuses_an_item_without_a_suggestion(queue, machine):
    automate(queue, machine)
    item = arrive(queue, None)

    assert "needs a suggestion" in _refused(
        item, reviewer_id=machine.pk, verdict="approve", code="verified"
    )


def _now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]
