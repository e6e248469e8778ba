"""The stop switch under concurrent intake: after a stop commits, the machine decides nothing.

Real commits on separate connections. The decision_suggestion trigger reads the switch rows
FOR SHARE: a stop (an UPDATE of one) waits for automatic decisions being written, and an
automatic decision being written after the stop's UPDATE waits for it, then sees it and is
refused (the item stays pending, the intake succeeds).
"""

from __future__ import annotations

import logging
import threading

import pytest
from django.contrib.auth.models import User
from django.db import connections, transaction

from queue_app.models import Decision, ItemState, Queue, ReviewItem, SuggestionView
from queue_app.services.automation import stop_automation
from tests.automation.conftest import arrive, automate, suggestion
from tests.blocking import BLOCK_WAIT_LIMIT_S, Session, wait_until_blocked_by_me

pytestmark = pytest.mark.django_db(transaction=True)


def _automatic() -> int:
    return Decision.objects.filter(suggestion_view=SuggestionView.AUTOMATIC).count()


@pytest.fixture
def operator(db) -> User:
    return User.objects.create_superuser("olga", password="pw-olga")


@pytest.fixture
def live_queue(queue, machine) -> Queue:
    return automate(queue, machine, qa_rate="50")


@pytest.mark.parametrize("scope", ["queue", "all"])
def test_a_stop_waits_for_an_automatic_decision_being_written(live_queue, operator, scope):
    target = live_queue if scope == "queue" else None
    with transaction.atomic():
        item = arrive(live_queue, suggestion("approve", "0.99"))
        assert item.state == ItemState.DECIDED  # written, holding the switches FOR SHARE
        stop = Session(lambda: stop_automation(operator=operator, queue=target))
        stop.start()
        wait_until_blocked_by_me(stop)
    stop.outcome()

    # The decision committed before the stop did, and stands; nothing automatic follows.
    assert Decision.objects.get(item=item).suggestion_view == SuggestionView.AUTOMATIC
    later = arrive(live_queue, suggestion("approve", "0.99"))
    assert later.state == ItemState.PENDING
    assert _automatic() == 1


@pytest.mark.parametrize("scope", ["queue", "all"])
def test_an_automatic_decision_after_a_stop_is_refused_and_the_item_kept(
    live_queue, operator, scope, caplog
):
    target = live_queue if scope == "queue" else None
    with caplog.at_level(logging.WARNING, logger="queue_app"), transaction.atomic():
        stop_automation(operator=operator, queue=target)
        # The intake's own read saw no stop (not committed yet); its trigger waits for it.
        intake = Session(lambda: arrive(live_queue, suggestion("approve", "0.99")))
        intake.start()
        wait_until_blocked_by_me(intake)
    item = intake.outcome()

    assert item.state == ItemState.PENDING
    assert ReviewItem.objects.get(pk=item.pk).state == ItemState.PENDING
    assert _automatic() == 0
    assert "automatic decision refused; the item waits for people" in caplog.text
    [refusal] = [r for r in caplog.records if r.getMessage().startswith("automatic decision ref")]
    assert "automatic decisions are stopped" in refusal.why


def test_no_automatic_decision_commits_after_the_stop_under_concurrent_intake(live_queue, operator):
    writers = 4
    after_stop_each = 4
    stopped = threading.Event()
    enough = threading.Event()
    results: list[tuple[int, str, bool]] = []  # (item id, state returned, began after stop)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def push(n: int) -> None:
        try:
            after = 0
            while after < after_stop_each:
                began_after_stop = stopped.is_set()
                item = arrive(live_queue, suggestion("approve", "0.99"))
                with lock:
                    results.append((item.pk, item.state, began_after_stop))
                    if sum(1 for r in results if r[1] == ItemState.DECIDED) >= 8:
                        enough.set()
                after += began_after_stop
        except BaseException as exc:  # reported below
            errors.append(exc)
            enough.set()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=push, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    try:
        assert enough.wait(BLOCK_WAIT_LIMIT_S)
        assert not errors, errors
        # Pressed while the writers keep writing: on this thread's own connection, committed
        # when it returns.
        stop_automation(operator=operator, queue=live_queue)
        at_stop = _automatic()
        stopped.set()
    finally:
        stopped.set()
        for thread in threads:
            thread.join(BLOCK_WAIT_LIMIT_S)
    assert not errors, errors

    after = [r for r in results if r[2]]
    assert len(after) == writers * after_stop_each
    # Every item whose intake began once the stop had committed waits for people ...
    assert {state for _, state, _ in after} == {ItemState.PENDING}
    assert not Decision.objects.filter(item_id__in=[pk for pk, _, _ in after]).exists()
    # ... and no automatic decision committed after the stop: the count read right after it
    # is the count now, although intakes that began before it were still finishing.
    assert _automatic() == at_stop
    assert at_stop >= 8
    # What each intake returned is what was committed.
    for pk, state, _ in results:
        assert ReviewItem.objects.get(pk=pk).state == state
