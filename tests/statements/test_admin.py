"""The admin refuses, at save time, a policy or mapping whose statements the contract refuses."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from queue_app.models import ReasonCode, ReasonMapping, StatementPolicy
from queue_app.models.access_history import ReasonMappingEvent, StatementPolicyEvent
from tests.admin.conftest import client_for, compliance  # noqa: F401 (a fixture)
from tests.conftest import make_queue
from tests.statements.conftest import REMOVED, give_policy

pytestmark = pytest.mark.django_db


def _policy_form(queue_id: int, **fields: Any) -> dict[str, Any]:
    return {
        "queue": queue_id,
        "restricts": "on",
        "restricting_verdict": "reject",
        "decision_visibility": [REMOVED],
        "territorial_scope": ["DE"],
        "content_type": ["CONTENT_TYPE_TEXT"],
        "source_type": "SOURCE_VOLUNTARY",
        "puid_template": "{queue}-{decision_id}",
        **fields,
    }


def _mapping_form(reason_id: int, **fields: Any) -> dict[str, Any]:
    return {
        "reason_code": reason_id,
        "decision_ground": "DECISION_GROUND_INCOMPATIBLE_CONTENT",
        "ground": "Terms of service, section 4",
        "reference_url": "https://platform.example/terms",
        "category": "STATEMENT_CATEGORY_SCAMS_AND_FRAUD",
        "keywords": ["KEYWORD_PHISHING"],
        "explanation_template": "{reason}. {note}",
        **fields,
    }


def test_it_saves_a_policy_the_contract_accepts_and_records_it(compliance):  # noqa: F811
    queue = make_queue("posts")
    response = client_for(compliance).post(
        reverse("admin:queue_app_statementpolicy_add"), _policy_form(queue.pk)
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    policy = StatementPolicy.objects.get(queue=queue)
    assert policy.decision_visibility == [REMOVED]
    event = StatementPolicyEvent.objects.get(pgh_obj=policy)
    assert event.pgh_label == "created" and event.pgh_context["user"] == compliance.pk


def test_it_refuses_a_policy_that_restricts_nothing(compliance):  # noqa: F811
    queue = make_queue("posts")
    response = client_for(compliance).post(
        reverse("admin:queue_app_statementpolicy_add"),
        _policy_form(queue.pk, decision_visibility=[]),
    )
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors, "the contract's refusal is shown"
    assert "at least one of decision_visibility" in str(form.errors)
    assert not StatementPolicy.objects.exists()
    assert not StatementPolicyEvent.objects.exists()


def test_it_refuses_a_puid_scheme_with_characters_the_contract_refuses(compliance):  # noqa: F811
    queue = make_queue("posts")
    response = client_for(compliance).post(
        reverse("admin:queue_app_statementpolicy_add"),
        _policy_form(queue.pk, puid_template="{queue}/{decision_id}"),
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["puid_template"]
    assert not StatementPolicy.objects.exists()


def test_it_refuses_a_mapping_the_contract_refuses_and_shows_why(compliance):  # noqa: F811
    queue = make_queue("posts")
    give_policy(queue)
    reason = ReasonCode.objects.get(queue=queue, code="fraud")
    # A keyword "other" text without the KEYWORD_OTHER keyword: the contract refuses it.
    response = client_for(compliance).post(
        reverse("admin:queue_app_reasonmapping_add"),
        _mapping_form(reason.pk, keyword_other="Fake lottery wins"),
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "KEYWORD_OTHER" in " ".join(errors["keyword_other"])
    assert "KEYWORD_OTHER" in response.content.decode()
    assert not ReasonMapping.objects.exists()
    assert not ReasonMappingEvent.objects.exists()


def test_it_refuses_a_template_with_an_unknown_placeholder(compliance):  # noqa: F811
    queue = make_queue("posts")
    give_policy(queue)
    reason = ReasonCode.objects.get(queue=queue, code="fraud")
    response = client_for(compliance).post(
        reverse("admin:queue_app_reasonmapping_add"),
        _mapping_form(reason.pk, explanation_template="{reason} {item.subject}"),
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["explanation_template"]
    assert not ReasonMapping.objects.exists()


def test_it_refuses_a_mapping_before_its_queue_has_a_policy(compliance):  # noqa: F811
    queue = make_queue("posts")
    reason = ReasonCode.objects.get(queue=queue, code="fraud")
    response = client_for(compliance).post(
        reverse("admin:queue_app_reasonmapping_add"), _mapping_form(reason.pk)
    )
    assert response.status_code == 200
    assert "statement policy" in str(response.context["adminform"].form.errors["reason_code"])
    assert not ReasonMapping.objects.exists()


def test_it_saves_a_mapping_the_contract_accepts_on_its_reasons_queue(compliance):  # noqa: F811
    queue = make_queue("posts")
    give_policy(queue)
    reason = ReasonCode.objects.get(queue=queue, code="fraud")
    response = client_for(compliance).post(
        reverse("admin:queue_app_reasonmapping_add"),
        _mapping_form(reason.pk, keywords=["KEYWORD_OTHER"], keyword_other="Fake lottery wins"),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    mapping = ReasonMapping.objects.get()
    assert (mapping.queue_id, mapping.reason_code_id) == (queue.pk, reason.pk)
    assert ReasonMappingEvent.objects.filter(pgh_obj=mapping, pgh_label="created").exists()
