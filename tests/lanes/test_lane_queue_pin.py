"""A second person's statements find their task by id *and* queue (lanes_sql.HOT_PATH).

The console passes the queue of the task it shows; the API and older callers may leave it
out, and the task's queue is read first. A queue that is not the task's matches nothing: the
lease is stale and nothing is written, so no statement can reach a task through another
queue (on Citus, another shard).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queue_app.errors import StaleLease
from queue_app.models import Decision, LaneOutcome, LaneTask, ReviewItem
from queue_app.services import (
    confirm_check,
    release_lane_task,
    renew_lane_task,
    return_check,
)
from tests.conftest import make_queue

pytestmark = pytest.mark.django_db

# The read of a task's queue by its id alone (services.lanes._queue_of), as Django writes it.
QUEUE_LOOKUP = 'SELECT "queue_app_lanetask"."queue_id" AS "queue_id" FROM "queue_app_lanetask"'


@pytest.fixture
def other_queue(reviewers_group):
    """A queue carol may review too: access is not what refuses below, the pin is."""
    return make_queue("other", group=reviewers_group)


def _unchanged(task: LaneTask) -> None:
    fresh = LaneTask.objects.get(pk=task.pk)
    assert (fresh.state, fresh.lease_token, fresh.lease_expires) == (
        "open",
        task.lease_token,
        task.lease_expires,
    )
    assert not LaneOutcome.objects.filter(task_id=task.pk).exists()
    assert ReviewItem.objects.get(pk=task.item_id).state == "awaiting_check"


@pytest.mark.parametrize(
    "call",
    [
        lambda task, user, q: confirm_check(
            task_id=task.pk, queue_id=q, user=user, lease_token=task.lease_token
        ),
        lambda task, user, q: return_check(
            task_id=task.pk, queue_id=q, user=user, lease_token=task.lease_token, note="why"
        ),
        lambda task, user, q: renew_lane_task(
            task_id=task.pk, queue_id=q, user=user, lease_token=task.lease_token
        ),
        lambda task, user, q: release_lane_task(
            task_id=task.pk, queue_id=q, user=user, lease_token=task.lease_token
        ),
    ],
    ids=["confirm", "return", "renew", "release"],
)
def test_another_queue_matches_nothing_and_nothing_is_written(call, held, carol, other_queue):
    with pytest.raises(StaleLease, match="no longer leased to you"):
        call(held, carol, other_queue.pk)
    _unchanged(held)
    # The task's own queue, given or read, still works (the refusal was the pin's).
    call(held, carol, held.queue_id)


def test_without_the_queue_the_tasks_own_is_read(held, carol):
    outcome = confirm_check(task_id=held.pk, user=carol, lease_token=held.lease_token)
    assert outcome.result == "confirmed"
    assert Decision.objects.get(pk=held.decision_id).item.state == "decided"


def test_without_the_queue_a_missing_task_is_stale(held, carol):
    for call in (confirm_check, renew_lane_task, release_lane_task):
        with pytest.raises(StaleLease, match="There is no such task"):
            call(task_id=held.pk + 1000, user=carol, lease_token=held.lease_token)
    _unchanged(held)


def test_the_console_passes_the_tasks_queue(held, carol, client):
    # The confirm request does not read the task's queue again: the page's task names it.
    client.force_login(carol)
    assert client.get(f"/lanes/{held.pk}/").status_code == 200
    with CaptureQueriesContext(connection) as queries:
        done = client.post(f"/lanes/{held.pk}/confirm/", {"lease_token": str(held.lease_token)})
    assert done.status_code == 302
    assert LaneOutcome.objects.get(task_id=held.pk).result == "confirmed"
    lookups = [q["sql"] for q in queries if (q["sql"] or "").startswith(QUEUE_LOOKUP)]
    assert lookups == []
