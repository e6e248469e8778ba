"""GET /api/v1/items/{id} shows the escalation hand-off both ways."""

from __future__ import annotations

import pytest

from queue_app.services import claim_next, escalate_abandoned
from tests.api.conftest import caller_for, make_client
from tests.conftest import backdate_lease, make_items
from tests.test_handoff import NOTE, _escalate

pytestmark = pytest.mark.django_db


def test_the_escalation_names_its_origin_and_the_origin_its_escalation(queue, alice):
    make_items(queue, 1)
    decision, opened = _escalate(queue, alice)
    _, token = make_client("robot", [queue, queue.escalation_queue])
    api = caller_for(token)

    escalated = api.get(f"/items/{opened.pk}").body
    assert escalated["escalated_from"] == [
        {
            "kind": "decision",
            "at": escalated["escalated_from"][0]["at"],
            "from_item_id": decision.item_id,
            "from_queue": "kyc",
            "decision_id": decision.pk,
            "by": ["alice"],
            "reason_code": "policy_gap",
            "reason": "policy_gap",
            "note": NOTE,
            "lease_count": None,
        }
    ]
    assert escalated["excluded_reviewers"] == ["alice"]
    assert escalated["escalations"] == []

    origin = api.get(f"/items/{decision.item_id}").body
    assert origin["escalations"] == [
        {
            "item_id": opened.pk,
            "queue": "escalation",
            "state": "pending",
            "decision_id": decision.pk,
        }
    ]
    assert origin["escalated_from"] == [] and origin["excluded_reviewers"] == []


def test_a_moved_item_names_who_abandoned_it(queue, alice):
    item = make_items(queue, 1)[0]
    for _ in range(queue.escalation_threshold):
        backdate_lease(claim_next(queue=queue, reviewer=alice).pk)
    escalate_abandoned()
    _, token = make_client("watcher", [queue.escalation_queue])
    body = caller_for(token).get(f"/items/{item.pk}").body
    (moved,) = body["escalated_from"]
    assert (moved["kind"], moved["from_item_id"], moved["from_queue"]) == (
        "abandoned",
        item.pk,
        "kyc",
    )
    assert (moved["by"], moved["lease_count"], moved["decision_id"]) == (["alice"], 3, None)
    assert body["excluded_reviewers"] == ["alice"]
