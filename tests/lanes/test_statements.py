"""How many SQL statements a check cycle costs (Next check, then Confirm): a budget."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queue_app.db.statements import lanes as lanes_sql
from queue_app.services import claim_lane_task, confirm_check
from tests.lanes.conftest import bulk_checks

pytestmark = pytest.mark.django_db

# Next check: is the user an API client's service user? (machines never work a lane), then the
# timeouts and the claim with the COMMIT in one round trip. Confirm: the same service-user
# check; the timeouts and the locking read of task, item and decision in one round trip; then
# the one statement that writes the outcome, the effect job, the item's state, any QA task and
# the audit event, with the COMMIT. Seven statements in five round trips.
CLAIM_STATEMENTS = 3
CONFIRM_STATEMENTS = 4


def test_a_check_cycle_costs_seven_statements(checked_queue, alice, carol):
    bulk_checks(checked_queue, alice, 3)
    claim_lane_task(queue=checked_queue, kind="check", user=carol)  # warm caches (permissions)
    with CaptureQueriesContext(connection) as claim:
        task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    with CaptureQueriesContext(connection) as confirm:
        # The task's queue, as the console passes it (it has loaded the task to show it).
        confirm_check(
            task_id=task.pk, queue_id=task.queue_id, user=carol, lease_token=task.lease_token
        )
    claimed, confirmed = _statements(claim), _statements(confirm)
    print(f"check cycle: {len(claimed)} + {len(confirmed)} statements", claimed + confirmed)
    assert len(claimed) == CLAIM_STATEMENTS
    assert len(confirmed) == CONFIRM_STATEMENTS


def _statements(captured: CaptureQueriesContext) -> list[str]:
    # The test's own transaction turns each atomic block into a savepoint; in a request they
    # are BEGIN (implicit) and COMMIT (sent with the last statement), which are not logged.
    return [
        " ".join(q["sql"].split()[:2])
        for q in captured.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def test_next_check_walks_the_open_lane_index_in_order(checked_queue, alice, carol):
    """B9's flat cost is this plan: the claim walks lanetask_open_due_claim in order and stops at
    the first free task, never reading or sorting the lane. The lane holds one maker's checks (an
    API client's, say), the case that once made the planner read and sort the whole lane
    (lanes_sql.CLAIM_LANE_TASK's comment)."""
    bulk_checks(checked_queue, alice, 5000)
    params = {
        "queue_id": checked_queue.pk,
        "kind": "check",
        "owner_id": carol.pk,
        "ttl": timedelta(minutes=10),
    }
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE queue_app_lanetask")
        cursor.execute("EXPLAIN (FORMAT JSON) " + lanes_sql.CLAIM_LANE_TASK, params)
        plan = cursor.fetchone()[0][0]["Plan"]
    [picked] = [n for n in _nodes(plan) if n.get("Subplan Name") == "CTE picked"]
    kinds = [(n["Node Type"], n.get("Index Name")) for n in _nodes(picked)]
    assert ("Index Scan", "lanetask_open_due_claim") in kinds, kinds
    assert not {"Sort", "Seq Scan", "Bitmap Heap Scan"} & {kind for kind, _ in kinds}, kinds
