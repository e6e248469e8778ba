"""Machines decide, people confirm: an API client's approvals in a checked queue wait."""

from __future__ import annotations

import pytest

from queue_app.models import ApiClient, EffectJob
from queue_app.services import claim_lane_task, confirm_check
from tests.api.conftest import caller_for, make_client

pytestmark = pytest.mark.django_db


def _robot_decides(checked_queue, amount: str) -> tuple[ApiClient, dict]:
    client, token = make_client("adjudicator", [checked_queue])
    api = caller_for(token)
    created = api.post(
        "/items",
        {
            "queue": checked_queue.slug,
            "subject": "Write-off 7",
            "payload": {"variance_amount": amount},
            "idempotency_key": f"w-{amount}",
            "source_hash": "s",
        },
    )
    assert created.status in (200, 201), created.body
    leased = api.post(f"/queues/{checked_queue.slug}/leases", {"batch_size": 1})
    [item] = leased.body["items"]
    decided = api.post(
        f"/items/{item['id']}/decision",
        {
            "lease_token": item["lease_token"],
            "verdict": "approve",
            "reason_code": "verified",
            "evidence_hash": item["evidence_hash"],
        },
    )
    assert decided.status == 201, decided.body
    return client, {"api": api, "decision": decided.body, "item": item}


def test_an_api_approval_in_a_checked_queue_reports_awaiting_check(checked_queue):
    _, got = _robot_decides(checked_queue, "5000")
    assert got["decision"]["applied"] == "awaiting_check"
    read = got["api"].get(f"/items/{got['item']['id']}")
    assert read.body["state"] == "awaiting_check"
    assert read.body["standing_outcome"] is None
    assert read.body["decisions"][0]["applied"] == "awaiting_check"
    assert not EffectJob.objects.exists()


def test_below_the_threshold_an_api_approval_is_pending_as_before(checked_queue):
    _, got = _robot_decides(checked_queue, "10")
    assert got["decision"]["applied"] == "pending"
    assert EffectJob.objects.count() == 1


def test_a_human_confirms_the_machines_approval(checked_queue, carol):
    _, got = _robot_decides(checked_queue, "5000")
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    read = got["api"].get(f"/items/{got['item']['id']}")
    assert read.body["state"] == "decided"
    assert read.body["standing_outcome"] == "approve"
    assert read.body["decisions"][0]["applied"] == "pending"


def test_the_clients_creator_cannot_check_its_approvals(checked_queue, supervisor):
    client, _ = _robot_decides(checked_queue, "5000")
    ApiClient.objects.filter(pk=client.pk).update(created_by=supervisor)
    # The task was opened before created_by was known: its principal is the service user.
    # A fresh decision by the client now counts as the supervisor's.
    client2, token = make_client("adjudicator-2", [checked_queue])
    ApiClient.objects.filter(pk=client2.pk).update(created_by=supervisor)
    api = caller_for(token)
    api.post(
        "/items",
        {
            "queue": checked_queue.slug,
            "subject": "Write-off 8",
            "payload": {"variance_amount": "9000"},
            "idempotency_key": "w-8",
            "source_hash": "s",
        },
    )
    [item] = api.post(f"/queues/{checked_queue.slug}/leases", {"batch_size": 1}).body["items"]
    api.post(
        f"/items/{item['id']}/decision",
        {
            "lease_token": item["lease_token"],
            "verdict": "approve",
            "reason_code": "verified",
            "evidence_hash": item["evidence_hash"],
        },
    )
    # The supervisor gets the first robot's check (its principal is that service user), and
    # never the second's.
    first = claim_lane_task(queue=checked_queue, kind="check", user=supervisor)
    assert first is not None and first.maker_id == client.user_id
    confirm_check(task_id=first.pk, user=supervisor, lease_token=first.lease_token)
    assert claim_lane_task(queue=checked_queue, kind="check", user=supervisor) is None
