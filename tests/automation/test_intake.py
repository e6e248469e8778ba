"""Automatic decisions at intake: the threshold, the record, the effect and what is left alone."""

from __future__ import annotations

import logging

import pytest
from django.db import connection

from queue_app.chain import seal_all, verify_chain
from queue_app.models import (
    AutomationSwitch,
    Decision,
    EffectJob,
    ItemEvent,
    ItemEventKind,
    ItemState,
    LaneTask,
    ReasonCode,
)
from queue_app.services import intake, item_decisions
from tests.automation.conftest import arrive, suggestion

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("confidence", "decided"),
    [("0.8999", False), ("0.9", True), ("0.90", True), ("0.9001", True), ("1", True)],
)
def test_it_decides_at_and_above_the_threshold_only(auto_queue, machine, confidence, decided):
    item = arrive(auto_queue, suggestion("approve", confidence))

    assert (item.state == ItemState.DECIDED) is decided
    item.refresh_from_db()
    assert (item.state == ItemState.DECIDED) is decided
    assert Decision.objects.filter(item=item).exists() is decided


def test_it_records_the_suggestion_as_the_machine_users_decision(auto_queue, machine):
    item = arrive(auto_queue, suggestion("reject", "0.97"))

    [decision] = item_decisions(item_id=item.pk)
    assert decision.reviewer_id == machine.pk
    assert decision.reviewer_username == "risk-model"
    assert decision.verdict == "reject"
    assert decision.reason_code.code == "fraud"
    assert decision.suggestion_view == "automatic"
    assert decision.suggestion_followed is True
    assert decision.suggestion_shown_at is None
    assert decision.evidence_hash == item.evidence_hash
    assert decision.lease_token is None
    assert item.decided_at is not None
    # The effect runs like a person's decision: one job, applied by the worker.
    assert EffectJob.objects.filter(decision=decision).count() == 1
    event = ItemEvent.objects.get(item=item, kind=ItemEventKind.AUTO_DECIDED)
    assert event.actor_id == machine.pk
    assert event.detail["decision_id"] == decision.pk
    assert event.detail["confidence"] == "0.97"
    assert event.detail["threshold"] == "0.9000"
    assert event.detail["model"] == {"name": "risk-model", "version": "7"}


def test_the_story_and_chain_see_an_ordinary_decided_item(auto_queue):
    item = arrive(auto_queue, suggestion("approve", "0.99"))

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT state, standing_outcome FROM queue_app_itemstory WHERE item_id = %s",
            [item.pk],
        )
        assert cursor.fetchone() == ("decided", "approve")


def test_a_queue_without_a_threshold_leaves_suggestions_to_people(queue, machine):
    item = arrive(queue, suggestion("approve", "1"))

    assert item.state == ItemState.PENDING
    assert not Decision.objects.filter(item=item).exists()


def test_an_item_without_a_suggestion_is_left_to_people(auto_queue):
    item = arrive(auto_queue, None)

    assert item.state == ItemState.PENDING
    assert not Decision.objects.exists()


def test_an_escalation_is_never_taken_automatically(auto_queue):
    item = arrive(auto_queue, suggestion("escalate", "1"))

    assert item.state == ItemState.PENDING
    assert not Decision.objects.exists()


def test_a_confidence_in_exponent_form_is_stored_and_judged_as_its_value(auto_queue):
    # Intake writes the confidence as a plain decimal, so the threshold compares its value.
    item = arrive(auto_queue, suggestion("approve", "1e0"))

    assert item.suggestion["confidence"] == "1"
    assert item.state == ItemState.DECIDED


def test_a_stopped_queue_leaves_everything_to_people(auto_queue):
    auto_queue.automation_stopped_at = _now()
    auto_queue.save()

    item = arrive(auto_queue, suggestion("approve", "0.99"))

    assert item.state == ItemState.PENDING
    assert not Decision.objects.exists()


def test_the_global_switch_stops_every_queue(auto_queue):
    AutomationSwitch.objects.filter(pk=1).update(stopped_at=_now())

    item = arrive(auto_queue, suggestion("approve", "0.99"))

    assert item.state == ItemState.PENDING


def test_an_inactive_automation_user_decides_nothing(auto_queue, machine):
    machine.is_active = False
    machine.save()

    item = arrive(auto_queue, suggestion("approve", "0.99"))

    assert item.state == ItemState.PENDING


def test_a_refused_decision_leaves_the_item_pending_and_the_intake_whole(
    auto_queue, caplog, monkeypatch
):
    # A reason the queue retired after intake checked the suggestion (another session may
    # retire it in between): the decision's reason is NULL, the database refuses it, and the
    # savepoint keeps the item. Intake's check is passed over to reach that moment.
    monkeypatch.setattr(intake, "clean_suggestion", lambda *, queue, suggestion: suggestion)
    ReasonCode.objects.filter(queue=auto_queue, code="verified").update(retired_at=_now())

    with caplog.at_level(logging.WARNING, logger="queue_app"):
        item = arrive(auto_queue, suggestion("approve", "0.99"))

    item.refresh_from_db()
    assert item.state == ItemState.PENDING
    assert ItemEvent.objects.filter(item=item, kind=ItemEventKind.CREATED).exists()
    assert not Decision.objects.exists()
    assert not LaneTask.objects.exists()
    assert "automatic decision refused; the item waits for people" in caplog.text


def _now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def test_the_chain_seals_and_verifies_an_automatic_decision(auto_queue):
    arrive(auto_queue, suggestion("approve", "0.99"))
    arrive(auto_queue, suggestion("reject", "0.5"))  # pending, no decision

    assert seal_all() >= 1
    result = verify_chain()
    assert result.ok, result.message
    assert result.checked == 1
