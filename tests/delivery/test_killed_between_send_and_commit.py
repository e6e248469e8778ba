"""A worker killed after the platform got the notice and before its commit: sent again, same key.

Real commits and separate connections: the sending thread's backend is terminated while the
platform holds its answer, so the done mark never commits.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from queue_app import delivery
from queue_app.models import DeliveryChannel, StatementDelivery
from tests.delivery.conftest import built

pytestmark = pytest.mark.django_db(transaction=True)


def _send(pids: list[int], outcome: list[object]) -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids.append(cursor.fetchone()[0])
        outcome.append(delivery.deliver_notices())
    except Exception as exc:  # the killed worker's error: what the test expects
        outcome.append(exc)
    finally:
        connections.close_all()


def test_the_platform_sees_one_key_twice_at_most_and_the_job_ends_done_once(
    notifying_posts, platform, alice
):
    (statement,) = built(notifying_posts, alice)
    platform.release.clear()
    pids: list[int] = []
    outcome: list[object] = []
    worker = threading.Thread(target=_send, args=(pids, outcome), name="killed-worker")
    worker.start()
    try:
        assert platform.arrived.wait(30), "the notice never reached the platform"
        # Sent, not committed: the job is still locked by the worker, and still not done.
        assert delivery.deliver_notices() == 0
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pids[0]])
    finally:
        platform.release.set()
        worker.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], Exception), outcome
    job = StatementDelivery.objects.get(statement=statement, channel=DeliveryChannel.NOTICE)
    assert job.done_at is None and job.attempts == 0

    assert delivery.deliver_notices() == 1
    assert delivery.deliver_notices() == 0
    job.refresh_from_db()
    assert job.done_at is not None and job.attempts == 1
    assert platform.keys() == [statement.puid, statement.puid]
    # The platform honours the key: one notice kept.
    assert list(platform.kept) == [statement.puid]
