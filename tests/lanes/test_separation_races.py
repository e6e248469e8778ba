"""Separation of duties under races: a lane claim and an overturn by one person, two connections.

bob holds can_overturn and works the QA lane. Whichever of his two writes commits second, his
claim of the QA review of alice's decision or his overturn of it, is refused: the lane trigger
and the overturn trigger meet on the item's row lock (a refused claim claims again, and passes
the task over).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection, transaction

from queue_app.errors import NotPermitted
from queue_app.models import Decision, LaneTask, Queue
from queue_app.services import claim_lane_task, confirm_check, overturn_decision
from tests.blocking import Session, wait_until_blocked_by_me
from tests.conftest import with_overturn_permission
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def confirmed(checked_queue: Queue, alice, carol) -> Decision:
    """alice's decision, confirmed by carol, drawn for QA."""
    checked_queue.qa_rate = Decimal(100)
    checked_queue.save(update_fields=["qa_rate"])
    decision = decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    return decision


def test_it_never_leases_a_qa_claim_that_raced_the_claimers_own_overturn(
    checked_queue, confirmed, bob
):
    bob = with_overturn_permission(bob)
    with transaction.atomic():
        overturn_decision(
            decision_id=confirmed.pk,
            admin=bob,
            corrected_verdict="reject",
            reason_code="reviewer_error",
        )
        claim = Session(lambda: claim_lane_task(queue=checked_queue, kind="qa", user=bob))
        claim.start()
        wait_until_blocked_by_me(claim)
    assert claim.outcome() is None
    assert LaneTask.objects.get(decision=confirmed, kind="qa").lease_owner_id is None


def test_it_refuses_an_overturn_that_raced_the_overturners_own_qa_claim(
    checked_queue, confirmed, bob
):
    bob = with_overturn_permission(bob)
    qa = LaneTask.objects.get(decision=confirmed, kind="qa")
    with transaction.atomic():
        with connection.cursor() as cursor:
            # The claim's write, held open: its lease changes hands under the item's lock.
            cursor.execute(
                "UPDATE queue_app_lanetask SET lease_owner_id = %s,"
                " lease_token = gen_random_uuid(), lease_expires = now() + interval '5 minutes'"
                " WHERE id = %s",
                [bob.pk, qa.pk],
            )
        overturn = Session(
            lambda: overturn_decision(
                decision_id=confirmed.pk,
                admin=bob,
                corrected_verdict="reject",
                reason_code="reviewer_error",
            )
        )
        overturn.start()
        wait_until_blocked_by_me(overturn)
    with pytest.raises(NotPermitted, match="Separation of duties"):
        overturn.outcome()
    assert not Decision.objects.filter(supersedes=confirmed).exists()
