"""POST /api/v1/appeals: intake, idempotency by reference, the window, and every bad field."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from queue_app.models import Appeal, ItemEvent, LaneTask, StatementPolicy
from tests.api.conftest import caller_for, make_client
from tests.appeals.conftest import appeal_body, restricted
from tests.conftest import triggers_off

pytestmark = pytest.mark.django_db


def nothing_written() -> None:
    assert Appeal.objects.count() == 0
    assert LaneTask.objects.filter(kind="appeal").count() == 0
    assert not ItemEvent.objects.filter(kind="appeal_received").exists()


def test_it_files_an_appeal_as_work_in_the_appeals_lane(api, posts, alice):
    statement = restricted(posts, alice)
    reply = api.post("/appeals", appeal_body(statement))
    assert reply.status == 201, reply.body
    assert reply.body["status"] == "pending"
    assert reply.body["statement_puid"] == statement.puid
    assert reply.body["decision_id"] == statement.decision_id
    appeal = Appeal.objects.get(pk=reply.body["id"])
    task = appeal.task
    assert (task.kind, task.state, task.decision_id) == ("appeal", "open", statement.decision_id)
    # Its deadline: the policy's (two weeks by default) from receipt, on the task and the appeal.
    assert task.due_at == appeal.due_at == appeal.received_at + timedelta(days=14)
    assert api.get(f"/appeals/{appeal.pk}").body == reply.body


def test_an_appeal_may_name_the_decision_instead_of_its_statement(api, posts, alice):
    statement = restricted(posts, alice)
    reply = api.post("/appeals", appeal_body(decision=statement.decision_id))
    assert reply.status == 201, reply.body
    assert reply.body["statement_puid"] == statement.puid


def test_the_same_reference_and_body_answers_the_same_appeal(api, posts, alice):
    statement = restricted(posts, alice)
    first = api.post("/appeals", appeal_body(statement))
    again = api.post("/appeals", appeal_body(statement))
    assert (first.status, again.status) == (201, 200)
    assert again.body == first.body
    assert Appeal.objects.count() == 1


def test_the_same_reference_with_another_body_is_a_conflict(api, posts, alice):
    statement = restricted(posts, alice)
    assert api.post("/appeals", appeal_body(statement)).status == 201
    reply = api.post("/appeals", appeal_body(statement, text="Something else entirely."))
    assert reply.status == 409
    assert reply.body["error"]["code"] == "idempotency_conflict"
    assert reply.body["error"]["details"][0]["field"] == "reference"
    assert Appeal.objects.count() == 1


def test_a_decision_is_appealed_once(api, posts, alice):
    statement = restricted(posts, alice)
    assert api.post("/appeals", appeal_body(statement)).status == 201
    reply = api.post("/appeals", appeal_body(statement, reference="complaint-2"))
    assert reply.status == 409
    assert reply.body["error"]["code"] == "already_appealed"
    assert Appeal.objects.count() == 1


def test_after_the_window_it_is_refused_and_nothing_is_written(api, posts, alice):
    statement = restricted(posts, alice)
    # Seven months ago: the default window (six months after the statement) closed.
    with triggers_off("queue_app_statementofreasons") as cursor:
        cursor.execute(
            "UPDATE queue_app_statementofreasons SET created_at = now() - interval '7 months' "
            "WHERE id = %s",
            [statement.pk],
        )
    reply = api.post("/appeals", appeal_body(statement))
    assert reply.status == 422, reply.body
    assert reply.body["error"]["code"] == "appeal_window_closed"
    assert reply.body["error"]["details"][0]["field"] == "statement"
    assert "closed" in reply.body["error"]["message"]
    nothing_written()


def test_a_longer_window_of_the_policy_lets_it_in(api, posts, alice):
    statement = restricted(posts, alice)
    StatementPolicy.objects.filter(queue=posts).update(appeal_window_months=12)
    with triggers_off("queue_app_statementofreasons") as cursor:
        cursor.execute(
            "UPDATE queue_app_statementofreasons SET created_at = now() - interval '7 months' "
            "WHERE id = %s",
            [statement.pk],
        )
    assert api.post("/appeals", appeal_body(statement)).status == 201


def test_a_decision_not_carried_out_yet_cannot_be_appealed(api, posts, alice):
    from tests.statements.conftest import decide

    decision = decide(posts, alice)  # not applied: no statement, not final
    reply = api.post("/appeals", appeal_body(decision=decision.pk))
    assert reply.status == 409
    assert reply.body["error"]["code"] == "not_appealable"
    nothing_written()


def test_a_queue_the_client_is_not_granted_is_unknown(posts, alice, reviewers_group):
    from tests.conftest import make_queue

    statement = restricted(posts, alice)
    _, token = make_client("elsewhere", [make_queue("other", group=reviewers_group)])
    reply = caller_for(token).post("/appeals", appeal_body(statement))
    assert reply.status == 422
    assert reply.body["error"]["code"] == "unknown_statement"
    nothing_written()


def test_a_client_without_the_intake_scope_is_refused(posts, alice):
    statement = restricted(posts, alice)
    _, token = make_client("adjudicator", [posts], intake=False)
    reply = caller_for(token).post("/appeals", appeal_body(statement))
    assert reply.status == 403
    nothing_written()
    assert caller_for(None).post("/appeals", appeal_body(statement)).status == 401


def test_another_clients_appeal_is_not_found(api, posts, alice, reviewers_group):
    from tests.conftest import make_queue

    statement = restricted(posts, alice)
    created = api.post("/appeals", appeal_body(statement)).body
    _, token = make_client("elsewhere", [make_queue("other", group=reviewers_group)])
    assert caller_for(token).get(f"/appeals/{created['id']}").status == 404


LONG = "x" * 10_001

# Every field wrong in every way the schema or the service refuses: (changes, field named).
BAD_FIELDS: list[tuple[dict[str, Any], str]] = [
    ({"reference": ""}, "reference"),
    ({"reference": "r" * 201}, "reference"),
    ({"reference": "a\x00b"}, "reference"),
    ({"reference": 7}, "reference"),
    ({"reference": None}, "reference"),
    ({"text": ""}, "text"),
    ({"text": LONG}, "text"),
    ({"text": "nul\x00"}, "text"),
    ({"text": ["a list"]}, "text"),
    ({"decision": "12"}, "decision"),
    ({"decision": 0}, "decision"),
    ({"decision": -3}, "decision"),
    ({"decision": 1.5}, "decision"),
    ({"decision": 2**70}, "decision"),
    ({"decision": 999_999_999}, "decision"),  # no such decision
    ({"statement": ""}, "statement"),
    ({"statement": "no-such-puid"}, "statement"),
    ({"statement": "s" * 501}, "statement"),
    ({"attachments": "a file"}, "attachments"),
    ({"attachments": [{"name": "a.png"}]}, "attachments"),
    (
        {
            "attachments": [
                {"name": "a.png", "content_type": "image", "size": 3, "sha256": "0" * 64}
            ]
        },
        "attachments",
    ),
    (
        {
            "attachments": [
                {"name": "a.png", "content_type": "image/png", "size": -1, "sha256": "0" * 64}
            ]
        },
        "attachments",
    ),
    (
        {
            "attachments": [
                {"name": "a.png", "content_type": "image/png", "size": 3, "sha256": "XYZ"}
            ]
        },
        "attachments",
    ),
    (
        {
            "attachments": [
                {
                    "name": "a.png",
                    "content_type": "image/png",
                    "size": 3,
                    "sha256": "0" * 64,
                    "url": "http://insecure.example/a.png",
                }
            ]
        },
        "attachments",
    ),
    (
        {
            "attachments": [
                {"name": f"{i}.png", "content_type": "image/png", "size": 3, "sha256": "0" * 64}
                for i in range(11)
            ]
        },
        "attachments",
    ),
    ({"surprise": True}, "surprise"),
]


@pytest.mark.parametrize(("changes", "field"), BAD_FIELDS)
def test_every_bad_field_is_refused_by_name_and_nothing_is_written(
    api, posts, alice, changes, field
):
    statement = restricted(posts, alice)
    body = appeal_body(statement)
    if "decision" in changes:
        del body["statement"]
    body.update(changes)
    reply = api.post("/appeals", body)
    assert 400 <= reply.status < 500, reply.body
    assert field in str(reply.body["error"]), reply.body
    nothing_written()


def test_naming_both_or_neither_decision_and_statement_is_refused(api, posts, alice):
    statement = restricted(posts, alice)
    both_body = appeal_body(decision=statement.decision_id)
    both_body["statement"] = statement.puid
    both = api.post("/appeals", both_body)
    neither = api.post("/appeals", appeal_body())
    for reply in (both, neither):
        assert reply.status == 422, reply.body
        assert reply.body["error"]["details"][0]["field"] == "decision"
    nothing_written()


def test_the_endpoints_are_in_the_openapi_document(api):
    document = caller_for(None).get("/openapi.json").body
    assert "post" in document["paths"]["/api/v1/appeals"]
    assert "get" in document["paths"]["/api/v1/appeals/{appeal_id}"]
    assert document["paths"]["/api/v1/appeals"]["post"]["operationId"] == "create_appeal"
