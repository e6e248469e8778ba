"""The real `run_apply_worker`: SIGKILLed between sending a notice and committing it."""

from __future__ import annotations

import signal

import pytest

from queue_app.models import DeliveryChannel, StatementDelivery, StatementOfReasons
from tests.delivery.conftest import decide
from tests.worker.conftest import spawn_worker, worker_env  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = ("--poll-interval", "0.1", "--escalate-every", "0")


def test_a_killed_worker_resends_with_the_same_key_and_each_delivery_ends_done_once(
    notifying_posts,
    platform,
    standin,
    alice,
    spawn_worker,  # noqa: F811
    worker_env,  # noqa: F811
    settings,
):
    decision = decide(notifying_posts, alice, note="Asked for a bank password")
    env = worker_env(
        REVIEW_TDB_URL=settings.REVIEW_TDB_URL, REVIEW_TDB_TOKEN_ENV=settings.REVIEW_TDB_TOKEN_ENV
    )
    platform.release.clear()
    worker = spawn_worker(*FAST, env=env)
    assert platform.arrived.wait(60), worker.output()
    # The platform has the notice; the worker waits for its answer, the done mark uncommitted.
    worker.signal(signal.SIGKILL)
    assert worker.wait() == -signal.SIGKILL
    platform.release.set()

    statement = StatementOfReasons.objects.get(decision=decision)
    notice = StatementDelivery.objects.get(statement=statement, channel=DeliveryChannel.NOTICE)
    assert notice.done_at is None
    assert standin.stored() == {}

    survivor = spawn_worker("--once", *FAST, env=env)
    assert survivor.wait(timeout=120) == 0, survivor.output()

    assert platform.keys() == [statement.puid, statement.puid]
    assert list(platform.kept) == [statement.puid]
    assert list(standin.stored()) == [statement.puid]
    for job in StatementDelivery.objects.filter(statement=statement):
        assert job.done_at is not None and job.attempts == 1, job.channel
    assert StatementDelivery.objects.count() == 2
