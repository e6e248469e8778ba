"""The Overturn form: one new row on success, clear form errors on every refusal."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from queue_app.models import ApiClient, Decision, ReasonCode
from queue_app.services import overturn_decision, standing_outcome
from tests.admin.conftest import client_for, decide
from tests.api.conftest import caller_for
from tests.conftest import make_items, run_in_threads

pytestmark = pytest.mark.django_db


def _url(decision: Decision) -> str:
    return reverse("admin:queue_app_decision_overturn", args=[decision.pk])


def _reason(decision: Decision, code: str = "reviewer_error") -> ReasonCode:
    return ReasonCode.objects.get(queue=decision.queue_id, verdict="overturn", code=code)


def _post(client, decision: Decision, **fields):
    data = {
        "corrected_verdict": "reject",
        "reason_code": _reason(decision).pk,
        "note": "The document was expired on the day of review.",
        **fields,
    }
    return client.post(_url(decision), data)


def test_it_records_exactly_one_overturn_and_shows_it_on_the_item(approved, compliance):
    client = client_for(compliance)
    response = _post(client, approved)
    item_url = reverse("admin:queue_app_reviewitem_change", args=[approved.item_id])
    assert response.status_code == 302
    assert response["Location"] == item_url
    overturn = Decision.objects.get(supersedes=approved)
    assert Decision.objects.count() == 2
    assert (overturn.verdict, overturn.corrected_verdict) == ("overturn", "reject")
    assert overturn.reviewer == compliance
    assert overturn.note == "The document was expired on the day of review."
    assert standing_outcome(item=approved.item_id) == "reject"
    page = client.get(item_url).content.decode()
    assert f"Overturn #{overturn.pk} of decision #{approved.pk}: now reject" in page
    assert "Standing outcome: <strong>reject</strong>" in page


def test_it_refuses_the_author_of_the_decision_with_a_form_error(approved, alice):
    alice.is_staff = True
    alice.save()
    alice.user_permissions.add(
        Permission.objects.get(codename="can_overturn"),
        Permission.objects.get(codename="view_decision"),
    )
    client = client_for(alice)
    page = client.get(_url(approved)).content.decode()
    assert "Four eyes: you cannot overturn a decision you made yourself." in page
    assert 'id="overturn-form"' not in page
    response = _post(client, approved)
    assert response.status_code == 200
    assert "Four eyes: you cannot overturn a decision you made yourself." in (
        response.content.decode()
    )
    assert Decision.objects.count() == 1


def test_it_refuses_an_already_superseded_decision_with_a_form_error(approved, compliance, root):
    overturn_decision(
        decision_id=approved.pk,
        admin=root,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    client = client_for(compliance)
    page = client.get(_url(approved)).content.decode()
    assert "This decision no longer stands" in page
    response = _post(client, approved, corrected_verdict="approve")
    assert response.status_code == 409
    assert "it has already been overturned by" in response.content.decode()
    assert Decision.objects.filter(supersedes=approved).count() == 1
    assert Decision.objects.count() == 2


def test_it_refuses_leaving_the_same_verdict_standing(approved, compliance):
    response = _post(client_for(compliance), approved, corrected_verdict="approve")
    assert response.status_code == 200
    assert "The decision already stands as approve." in response.content.decode()
    assert Decision.objects.count() == 1


def test_it_offers_only_active_overturn_reasons_of_the_items_queue(approved, compliance):
    retired = ReasonCode.objects.create(
        queue_id=approved.queue_id,
        verdict="overturn",
        code="old_policy",
        label="Old policy",
        retired_at=timezone.now(),
    )
    approve_reason = ReasonCode.objects.get(
        queue=approved.queue_id, verdict="approve", code="verified"
    )
    client = client_for(compliance)
    page = client.get(_url(approved)).content.decode()
    assert "reviewer_error" in page
    assert "old_policy" not in page
    for reason in (retired, approve_reason):
        response = _post(client, approved, reason_code=reason.pk)
        assert response.status_code == 200
        assert "Select a valid choice" in response.content.decode()
    assert Decision.objects.count() == 1


def test_it_asks_for_a_verdict_and_a_note(approved, compliance):
    response = _post(client_for(compliance), approved, corrected_verdict="escalate", note="")
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert set(errors) == {"corrected_verdict", "note"}
    assert Decision.objects.count() == 1


def test_an_unknown_decision_is_not_found(compliance):
    response = client_for(compliance).get(
        reverse("admin:queue_app_decision_overturn", args=[999999])
    )
    assert response.status_code == 404


@pytest.mark.django_db(transaction=True)
def test_two_admins_overturning_at_once_get_one_row_and_one_clear_refusal(approved, compliance):
    second = User.objects.create_user("dana", password="pw-dana", is_staff=True)
    second.groups.set(compliance.groups.all())
    reason = _reason(approved).pk
    clients = []
    for user in (compliance, second):
        client = Client()
        client.force_login(user)
        clients.append(client)

    def overturn(i: int):
        response = clients[i].post(
            _url(approved),
            {"corrected_verdict": "reject", "reason_code": reason, "note": f"admin {i}"},
        )
        return response.status_code, response.content.decode()

    results = run_in_threads(2, overturn)
    # Whether the loser's POST began before or after the winner committed, it gets one answer.
    assert sorted(status for status, _ in results) == [302, 409]
    refused = next(body for status, body in results if status == 409)
    assert "it has already been overturned by" in refused
    assert Decision.objects.filter(supersedes=approved).count() == 1


def test_an_overturn_committed_after_the_page_checked_gets_the_same_refusal(
    approved, compliance, root, monkeypatch
):
    # The view looks for an overturn, then the service locks the decision and looks again.
    # Another admin's overturn landing between the two gets the answer a later POST gets.
    from queue_app import services

    checked = services.four_eyes_refusal
    raced = []

    def overturned_meanwhile(**kwargs):
        if not raced:
            raced.append(
                overturn_decision(
                    decision_id=approved.pk,
                    admin=root,
                    corrected_verdict="reject",
                    reason_code="reviewer_error",
                )
            )
        return checked(**kwargs)

    monkeypatch.setattr(services, "four_eyes_refusal", overturned_meanwhile)
    response = _post(client_for(compliance), approved)
    assert raced
    assert response.status_code == 409
    body = response.content.decode()
    assert f"overturn #{raced[0].pk}" in body
    assert 'id="overturn-form"' not in body
    assert Decision.objects.filter(supersedes=approved).count() == 1


def test_an_escalation_offers_no_overturn_and_a_forced_post_is_a_form_error(
    queue, alice, compliance
):
    (item,) = make_items(queue, 1)
    escalated = decide(item, alice, verdict="escalate", reason="policy_gap")
    client = client_for(compliance)
    page = client.get(reverse("admin:queue_app_decision_change", args=[escalated.pk]))
    assert b"Overturn this decision" not in page.content
    response = _post(client, escalated)
    assert response.status_code == 200
    assert "An escalation is not overturned" in response.content.decode()
    assert not Decision.objects.filter(supersedes=escalated).exists()


def _shows_no_overturn(client, decision: Decision, refusal: str) -> None:
    """The decision page offers no overturn; its form is not offered; a forced POST is refused."""
    page = client.get(reverse("admin:queue_app_decision_change", args=[decision.pk]))
    assert "Overturn this decision" not in page.content.decode()
    form_page = client.get(_url(decision)).content.decode()
    assert refusal in form_page
    assert 'id="overturn-form"' not in form_page
    response = _post(client, decision, corrected_verdict="approve")
    assert response.status_code == 200
    assert refusal in response.content.decode()


def test_an_author_earlier_in_the_chain_is_offered_no_overturn(approved, alice, compliance):
    # Alice approved, Casey overturned to reject; Alice, made an admin since, may not bring
    # her verdict back by overturning Casey's overturn.
    caseys = overturn_decision(
        decision_id=approved.pk,
        admin=compliance,
        corrected_verdict="reject",
        reason_code="reviewer_error",
        note="expired",
    )
    alice.is_staff = True
    alice.save()
    alice.groups.add(*compliance.groups.all())
    _shows_no_overturn(
        client_for(alice), caseys, f"Four eyes: you made decision #{approved.pk} on this item"
    )
    assert standing_outcome(item=approved.item_id) == "reject"
    assert Decision.objects.count() == 2


def test_an_admin_cannot_overturn_a_decision_of_a_client_they_created(queue, compliance, root):
    client = client_for(compliance)
    created = client.post(
        "/admin/queue_app/apiclient/add/",
        {"name": "robot", "can_adjudicate": "on", "queues": [queue.pk]},
    )
    token = re.search(r'id="api-token"[^>]*>(rc_[\w-]+)<', created.content.decode()).group(1)
    assert ApiClient.objects.get(name="robot").created_by == compliance
    make_items(queue, 1)
    robot = caller_for(token)
    (item,) = robot.post("/queues/kyc/leases", {"batch_size": 1}).body["items"]
    decided = robot.post(
        f"/items/{item['id']}/decision",
        {
            "lease_token": item["lease_token"],
            "verdict": "approve",
            "reason_code": "verified",
            "evidence_hash": item["evidence_hash"],
        },
    )
    assert decided.status == 201
    decision = Decision.objects.get(pk=decided.body["id"])
    _shows_no_overturn(client, decision, "made by API client “robot”, which you created")
    assert not Decision.objects.filter(supersedes=decision).exists()
    # Another admin sees the form and may overturn.
    page = client_for(root).get(reverse("admin:queue_app_decision_change", args=[decision.pk]))
    assert "Overturn this decision" in page.content.decode()


def test_an_overturned_decision_offers_no_form_and_links_the_overturn_that_stands(
    approved, compliance, root
):
    overturn = overturn_decision(
        decision_id=approved.pk,
        admin=root,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    page = client_for(compliance).get(_url(approved)).content.decode()
    assert 'id="overturn-form"' not in page
    change = reverse("admin:queue_app_decision_change", args=[overturn.pk])
    assert f'<a href="{change}">overturn #{overturn.pk}</a>' in page
    # The overturn that stands may itself be overturned (by someone who did not record it).
    assert f'<a href="{_url(overturn)}">overturn #{overturn.pk}</a> instead' in page


def test_the_overturn_form_marks_every_field_required_before_submit(approved, compliance):
    page = client_for(compliance).get(_url(approved)).content.decode()
    assert "novalidate" not in page
    assert page.count('class="required-mark"') == 4  # the legend and three labels
    assert '<textarea name="note" cols="60" rows="4" maxlength="10000" required' in page
    assert '<select name="reason_code" required' in page
