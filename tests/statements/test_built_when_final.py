"""A statement is built when a restricting decision's outcome becomes final, and only then."""

from __future__ import annotations

import hashlib
import json

import pytest

from queue_app.api.auth import issue_api_client
from queue_app.apply import apply_batch
from queue_app.models import (
    CheckPolicy,
    Decision,
    EffectJob,
    StatementOfReasons,
    StatementPolicy,
)
from queue_app.selectors.access_timeline import describe, history_events
from queue_app.services import claim_lane_task, confirm_check, overturn_decision
from queue_app.services.statements import automated_decision
from queue_app.transparency.contract import validate_statement
from tests.conftest import make_queue, with_overturn_permission
from tests.statements.conftest import decide, give_policy, map_reason

pytestmark = pytest.mark.django_db


def test_a_rejection_gets_one_valid_statement_when_applied(posts, alice):
    decision = decide(posts, alice, note="Phishing link in the post.")
    assert not StatementOfReasons.objects.exists()  # not final until carried out
    assert apply_batch() == 1
    statement = StatementOfReasons.objects.get()
    body = statement.statement
    assert statement.decision_id == decision.pk and statement.kind == "restriction"
    assert statement.puid == body["puid"] == f"posts-{decision.pk}"
    assert statement.errors == {} and validate_statement(body) == {}
    assert statement.sha256 == hashlib.sha256(statement.body.encode()).hexdigest()
    assert statement.body == json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert body["decision_visibility"] == ["DECISION_VISIBILITY_CONTENT_REMOVED"]
    assert body["incompatible_content_ground"] == "Terms of service, section 4 (fraud)"
    assert body["decision_facts"] == "Removed under our rule on fraud. Phishing link in the post."
    assert body["territorial_scope"] == ["DE", "FR"]
    # Decided by a person, on an item the console created: no automation anywhere.
    assert body["automated_decision"] == "AUTOMATED_DECISION_NOT_AUTOMATED"
    assert body["automated_detection"] == "No"
    assert apply_batch() == 0
    assert StatementOfReasons.objects.count() == 1


def test_an_approval_restricts_nobody(posts, alice):
    decide(posts, alice, verdict="approve", reason="verified")
    assert apply_batch() == 1
    assert not StatementOfReasons.objects.exists()


def test_a_queue_without_a_policy_builds_none(queue, alice):
    decide(queue, alice)
    assert apply_batch() == 1
    assert not StatementOfReasons.objects.exists()


def test_a_policy_switched_off_builds_none(posts, alice):
    StatementPolicy.objects.filter(queue=posts).update(restricts=False)
    decide(posts, alice)
    assert apply_batch() == 1
    assert not StatementOfReasons.objects.exists()


def test_a_checked_rejection_gets_its_statement_only_after_the_confirmation(posts, alice, carol):
    CheckPolicy.objects.create(queue=posts, verdict="reject")
    decision = decide(posts, alice)
    assert apply_batch() == 0  # waiting for its check: no effect job, no statement
    assert not StatementOfReasons.objects.exists()
    task = claim_lane_task(queue=posts, kind="check", user=carol)
    assert task is not None and task.decision_id == decision.pk
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    assert not StatementOfReasons.objects.exists()
    assert apply_batch() == 1
    statement = StatementOfReasons.objects.get()
    assert statement.decision_id == decision.pk and statement.errors == {}
    assert statement.statement["automated_decision"] == "AUTOMATED_DECISION_NOT_AUTOMATED"


def test_an_overturn_that_lifts_the_restriction_names_the_statement_it_replaces(
    posts, alice, supervisor
):
    decision = decide(posts, alice)
    apply_batch()
    first = StatementOfReasons.objects.get()
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=with_overturn_permission(supervisor),
        corrected_verdict="approve",
        reason_code="reviewer_error",
        note="The link was the bank's own.",
    )
    assert apply_batch() == 1
    second = StatementOfReasons.objects.get(decision=overturn)
    assert second.kind == "lifted" and second.replaces_id == first.pk
    assert second.statement["replaces_puid"] == first.puid
    assert second.puid == f"posts-{overturn.pk}"
    assert StatementOfReasons.objects.count() == 2


def test_an_overturn_to_a_rejection_gets_a_restriction_statement(posts, alice, supervisor):
    decision = decide(posts, alice, verdict="approve", reason="verified")
    apply_batch()
    overturn = overturn_decision(
        decision_id=decision.pk,
        admin=with_overturn_permission(supervisor),
        corrected_verdict="reject",
        reason_code="reviewer_error",
        note="Missed the phishing link.",
    )
    apply_batch()
    statement = StatementOfReasons.objects.get()
    assert (statement.decision_id, statement.kind, statement.replaces_id) == (
        overturn.pk,
        "restriction",
        None,
    )
    assert statement.errors == {}
    assert statement.statement["decision_facts"] == "Corrected on review: Missed the phishing link."


def test_an_api_client_decision_is_fully_automated_and_detected(posts, reviewers_group):
    client, _token = issue_api_client(
        name="robot", can_intake=True, can_adjudicate=True, queues=[posts]
    )
    client.user.groups.add(reviewers_group)
    decide(posts, client.user, client=client)
    apply_batch()
    body = StatementOfReasons.objects.get().statement
    assert body["automated_decision"] == "AUTOMATED_DECISION_FULLY"
    assert body["automated_detection"] == "Yes"


def test_a_person_confirming_a_machine_decision_makes_it_partially_automated(
    posts, reviewers_group, carol
):
    CheckPolicy.objects.create(queue=posts, verdict="reject")
    client, _token = issue_api_client(
        name="robot", can_intake=True, can_adjudicate=True, queues=[posts]
    )
    client.user.groups.add(reviewers_group)
    decision = decide(posts, client.user)
    task = claim_lane_task(queue=posts, kind="check", user=carol)
    assert task is not None and task.decision_id == decision.pk
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    apply_batch()
    body = StatementOfReasons.objects.get().statement
    assert body["automated_decision"] == "AUTOMATED_DECISION_PARTIALLY"
    assert body["automated_detection"] == "No"


def test_a_statement_the_contract_refuses_is_recorded_failing_and_the_worker_goes_on(
    reviewers_group, alice
):
    # Written past the admin (as a SQL shell could): the contract refuses the category.
    queue = make_queue("shop", group=reviewers_group)
    give_policy(queue)
    map_reason(queue, "fraud", category="STATEMENT_CATEGORY_NOT_A_CATEGORY")
    decision = decide(queue, alice)
    assert apply_batch() == 1
    statement = StatementOfReasons.objects.get()
    assert "category" in statement.errors and not statement.valid
    job = EffectJob.objects.get(decision=decision)
    assert job.done_at is not None and not job.dead


def test_a_reason_without_a_mapping_gives_a_failing_statement(posts, alice):
    decide(posts, alice, reason="document_expired")
    assert apply_batch() == 1
    statement = StatementOfReasons.objects.get()
    assert statement.errors["reason_code"] == [
        "The reason document_expired has no statement mapping."
    ]


def test_an_item_sets_its_own_scope_and_content_type_at_intake(posts, alice):
    decide(
        posts,
        alice,
        payload={
            "text": "Buy followers",
            "dsa": {"territorial_scope": ["AT"], "content_type": ["CONTENT_TYPE_IMAGE"]},
        },
    )
    apply_batch()
    statement = StatementOfReasons.objects.get()
    assert statement.errors == {}
    body = statement.statement
    assert (body["territorial_scope"], body["content_type"]) == (["AT"], ["CONTENT_TYPE_IMAGE"])


def test_an_item_that_sets_a_value_the_contract_refuses_gets_a_failing_statement(posts, alice):
    decide(posts, alice, payload={"dsa": {"territorial_scope": ["US"]}})
    assert apply_batch() == 1
    assert "territorial_scope" in StatementOfReasons.objects.get().errors


def test_the_policy_and_mappings_are_in_the_queues_configuration_history(posts):
    rows = list(describe(history_events(queue=posts)))
    kinds = {row.kind for row in rows}
    assert {"statement policy", "reason's statement mapping"} <= kinds


def test_the_machines_own_decision_is_fully_automated(alice):
    # What the queue's automation user records when it takes the suggestion itself.
    automatic = Decision(reviewer_id=alice.pk, suggestion_view="automatic")
    shown = Decision(reviewer_id=alice.pk, suggestion_view="shown")
    assert automated_decision(automatic) == "AUTOMATED_DECISION_FULLY"
    assert automated_decision(shown) == "AUTOMATED_DECISION_NOT_AUTOMATED"
