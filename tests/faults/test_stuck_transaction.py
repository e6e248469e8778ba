"""A transaction left idle on queue rows: claims flow around it, fenced writes fail fast, the
server ends it, and its rows become claimable again."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.test import Client

from queue_app.console.views import DATABASE_BUSY
from queue_app.models import Decision, ItemState, ReviewItem
from queue_app.services import claim_batch, claim_next, submit_decision
from tests.conftest import make_items, shown_hash
from tests.worker.conftest import PROJECT_DIR, database_url, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

IDLE_TIMEOUT_MS = 4000


def _backend_state(pid: int) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row[0] if row else None


@pytest.fixture
def stuck_session(tmp_path):
    """Start a process holding row locks then idling; yield (process, backend pid, output)."""
    started = []

    def start(items: list[ReviewItem]) -> tuple[subprocess.Popen, int, Callable[[], str]]:
        log = tmp_path / "stuck.log"
        env = {
            **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
            "DATABASE_URL": database_url(connection.settings_dict),
            "DB_IDLE_IN_TRANSACTION_TIMEOUT_MS": str(IDLE_TIMEOUT_MS),
            "STUCK_ITEM_IDS": ",".join(str(i.pk) for i in items),
            "LOG_LEVEL": "WARNING",
        }
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    "shell",
                    "-c",
                    "from tests.faults.stuck_session import hold; hold()",
                ],
                cwd=PROJECT_DIR,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        started.append(proc)

        def output() -> str:
            return log.read_text(errors="replace")

        wait_until(lambda: "locked" in output() or proc.poll() is not None, what="the lock")
        assert f"locked {len(items)}" in output(), output()
        pid = int(re.search(r"pid (\d+)", output()).group(1))
        return proc, pid, output

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_claims_flow_around_a_stuck_transaction_until_the_server_ends_it(
    settings, stuck_session, alice, bob, supervisor, queue
):
    settings.REVIEW_LOCK_TIMEOUT_MS = 300
    items = make_items(queue, 8)
    mine = claim_next(queue=queue, reviewer=alice)
    assert mine.pk == items[0].pk
    # The stuck session holds alice's leased item and the two best pending items.
    locked = [items[0], items[1], items[2]]
    proc, pid, output = stuck_session(locked)
    locked_ids = {i.pk for i in locked}

    # Claims skip the locked rows and hand out the others.
    bobs = claim_next(queue=queue, reviewer=bob)
    batch = claim_batch(queue=queue, worker=supervisor, n=10, ttl=timedelta(minutes=5))
    handed_out = {bobs.pk} | {i.pk for i in batch}
    assert handed_out == {i.pk for i in items[3:]}

    # The fenced write needs the locked row: a lock timeout, nothing written.
    with pytest.raises(OperationalError) as raised:
        submit_decision(
            item_id=mine.pk,
            reviewer=alice,
            lease_token=mine.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(mine),
        )
    assert isinstance(raised.value.__cause__, psycopg.errors.LockNotAvailable)
    # The reviewer sees words and a 503, not a spinner or a traceback.
    client = Client()
    client.force_login(alice)
    page = client.post(
        f"/items/{mine.pk}/decide/",
        {
            "lease_token": str(mine.lease_token),
            "evidence_hash": shown_hash(mine),
            "verdict": "approve",
            "reason_code": "verified",
        },
    )
    assert page.status_code == 503
    assert DATABASE_BUSY in page.content.decode()
    assert not Decision.objects.exists()
    # Everything above happened while the session still held its locks.
    assert _backend_state(pid) == "idle in transaction", output()

    # idle_in_transaction_session_timeout ends it; its locks go with it.
    wait_until(lambda: _backend_state(pid) is None, timeout=120, what="the server to end it")
    proc.send_signal(signal.SIGUSR1)  # the forgotten shell wakes up: its transaction is gone
    assert proc.wait(timeout=60) == 3, output()
    assert "idle-in-transaction timeout" in output()

    decision = submit_decision(
        item_id=mine.pk,
        reviewer=alice,
        lease_token=mine.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(mine),
    )
    assert decision.item_id == mine.pk
    carol = User.objects.create_user("carol")
    carol.groups.set(alice.groups.all())
    freed = claim_batch(queue=queue, worker=carol, n=10, ttl=timedelta(minutes=5))
    assert {i.pk for i in freed} == locked_ids - {mine.pk}
    assert ReviewItem.objects.filter(state=ItemState.PENDING).count() == 0
