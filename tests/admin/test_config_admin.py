"""Queues and reason codes: configuration with clear errors; codes retire, never vanish."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from queue_app.admin.forms import ReasonCodeForm
from queue_app.models import Queue, ReasonCode
from queue_app.services import reason_codes_for
from tests.admin.conftest import client_for

pytestmark = pytest.mark.django_db


def _queue_form(**fields) -> dict:
    return {
        "slug": "payments",
        "name": "Payment holds",
        "description": "",
        "lease_ttl": "00:15:00",
        "max_in_flight": "500",
        "escalation_threshold": "3",
        "escalation_queue": "",
        "effect": "log",
        "webhook_url": "",
        "webhook_secret_env": "",
        "release_skip": "00:15:00",
        # The evidence-rule inline's management form (no rules).
        "evidence_rules-TOTAL_FORMS": "0",
        "evidence_rules-INITIAL_FORMS": "0",
        # Deadlines and holds: no default SLA, and the hold-reason inline (none).
        "default_sla": "",
        "sla_warning": "04:00:00",
        "max_hold": "7 00:00:00",
        "hold_reasons-TOTAL_FORMS": "0",
        "hold_reasons-INITIAL_FORMS": "0",
        # Second-person controls: the QA rate and the maker-checker policy inline (none).
        "qa_rate": "0",
        "check_policies-TOTAL_FORMS": "0",
        "check_policies-INITIAL_FORMS": "0",
        **fields,
    }


def test_it_creates_a_queue_with_every_setting(compliance, reviewers_group):
    escalation = Queue.objects.create(slug="escalation", name="Escalations")
    response = client_for(compliance).post(
        reverse("admin:queue_app_queue_add"),
        _queue_form(
            escalation_queue=escalation.pk,
            effect="webhook",
            webhook_url="https://ledger.example.test/hooks/review",
            webhook_secret_env="LEDGER_WEBHOOK_SECRET",
            reviewer_groups=[reviewers_group.pk],
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    queue = Queue.objects.get(slug="payments")
    assert queue.lease_ttl.total_seconds() == 900
    assert queue.escalation_queue == escalation
    assert queue.webhook_secret_env == "LEDGER_WEBHOOK_SECRET"
    assert list(queue.reviewer_groups.all()) == [reviewers_group]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"effect": "webhook"}, "webhook_url", "A webhook effect needs the URL"),
        ({"effect": "sys.exit"}, "effect", "sys.exit is not an allowed effect"),
        ({"effect": "os.system"}, "effect", "os.system is not an allowed effect"),
        ({"lease_ttl": "00:00:00"}, None, "queue_lease_ttl_positive"),
        ({"escalation_threshold": "0"}, None, "queue_escalation_threshold_min"),
        ({"lease_ttl": "soon"}, "lease_ttl", "Enter a valid duration."),
    ],
)
def test_it_explains_a_bad_queue_setting(compliance, fields, field, message):
    response = client_for(compliance).post(
        reverse("admin:queue_app_queue_add"), _queue_form(**fields)
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    text = " ".join(errors.get(field or "__all__", []))
    assert message in text, errors
    assert not Queue.objects.filter(slug="payments").exists()


def test_a_queue_keeps_a_registered_effect_and_cannot_keep_one_set_outside_the_allow_list(
    compliance, queue
):
    # Rows written before the allow-list name dotted paths: a registered one stays selectable.
    Queue.objects.filter(pk=queue.pk).update(effect="tests.worker.ledger.record")
    url = reverse("admin:queue_app_queue_change", args=[queue.pk])
    saved = client_for(compliance).post(
        url, _queue_form(slug="kyc", name="Kyc", effect="tests.worker.ledger.record")
    )
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    assert 'value="ledger_record"' in client_for(compliance).get(url).content.decode()

    Queue.objects.filter(pk=queue.pk).update(effect="sys.exit")
    refused = client_for(compliance).post(
        url, _queue_form(slug="kyc", name="Kyc", effect="sys.exit")
    )
    assert refused.status_code == 200
    assert "sys.exit is not an allowed effect" in refused.content.decode()


def test_a_queue_cannot_escalate_to_itself(compliance, queue):
    response = client_for(compliance).post(
        reverse("admin:queue_app_queue_change", args=[queue.pk]),
        _queue_form(slug="kyc", name="Kyc", escalation_queue=queue.pk),
    )
    assert response.status_code == 200
    assert "A queue cannot escalate to itself." in response.content.decode()
    queue.refresh_from_db()
    assert queue.escalation_queue_id != queue.pk


def test_retiring_a_code_hides_it_from_new_decisions_and_keeps_old_ones(approved, compliance):
    client = client_for(compliance)
    verified = ReasonCode.objects.get(queue=approved.queue_id, verdict="approve", code="verified")
    url = reverse("admin:queue_app_reasoncode_changelist")
    client.post(url, {"action": "retire", "_selected_action": [verified.pk]})
    verified.refresh_from_db()
    assert verified.retired_at is not None
    assert (
        not reason_codes_for(queue=approved.queue_id, verdict="approve")
        .filter(pk=verified.pk)
        .exists()
    )
    approved.refresh_from_db()
    assert approved.reason_code_id == verified.pk
    retired = client.get(url, {"status": "retired"}).context["cl"].result_list
    assert [code.pk for code in retired] == [verified.pk]

    client.post(url, {"action": "unretire", "_selected_action": [verified.pk]})
    assert (
        reason_codes_for(queue=approved.queue_id, verdict="approve").filter(pk=verified.pk).exists()
    )


def test_a_used_code_keeps_its_meaning_and_cannot_be_deleted(approved, root):
    client = client_for(root)
    verified = ReasonCode.objects.get(queue=approved.queue_id, verdict="approve", code="verified")
    change = reverse("admin:queue_app_reasoncode_change", args=[verified.pk])
    page = client.get(change).content.decode()
    assert 'name="label"' not in page  # shown, not offered for editing
    assert "Frozen once a decision uses the code" in page
    client.post(change, {"code": "renamed", "verdict": "reject", "label": "Fraud confirmed"})
    verified.refresh_from_db()
    assert (verified.code, verified.verdict, verified.label) == ("verified", "approve", "verified")
    delete = reverse("admin:queue_app_reasoncode_delete", args=[verified.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403


def test_an_unused_codes_label_can_still_be_corrected(queue, root):
    unused = ReasonCode.objects.get(queue=queue, verdict="approve", code="within_tolerance")
    response = client_for(root).post(
        reverse("admin:queue_app_reasoncode_change", args=[unused.pk]),
        {"label": "Within tolerance"},
    )
    assert response.status_code == 302
    unused.refresh_from_db()
    assert unused.label == "Within tolerance"


def test_a_label_offered_before_the_first_use_is_refused_after_it(approved, queue):
    # The admin opened the change page while the code was unused (label editable); a decision
    # used the code before they saved.
    verified = ReasonCode.objects.get(queue=queue, verdict="approve", code="verified")
    form = ReasonCodeForm(
        data={"queue": queue.pk, "verdict": "approve", "code": "verified", "label": "Fraud"},
        instance=verified,
    )
    assert not form.is_valid()
    assert "its label is frozen" in form.errors["label"][0]
    verified.refresh_from_db()
    assert verified.label == "verified"


def test_a_past_decision_shows_the_label_it_was_made_with(approved, root):
    client = client_for(root)
    verified = ReasonCode.objects.get(queue=approved.queue_id, verdict="approve", code="verified")
    client.post(
        reverse("admin:queue_app_reasoncode_change", args=[verified.pk]),
        {"label": "Fraud confirmed"},
    )
    page = client.get(reverse("admin:queue_app_reviewitem_change", args=[approved.item_id]))
    assert "Reason: verified (verified)" in page.content.decode()
    assert "Fraud confirmed" not in page.content.decode()


def test_a_duplicate_code_is_a_form_error(compliance, queue):
    response = client_for(compliance).post(
        reverse("admin:queue_app_reasoncode_add"),
        {"queue": queue.pk, "verdict": "approve", "code": "verified", "label": "Again"},
    )
    assert response.status_code == 200
    assert ReasonCode.objects.filter(queue=queue, verdict="approve", code="verified").count() == 1


def test_seed_demo_admins_may_overturn_but_not_rewrite_and_reviewers_get_no_admin(monkeypatch):
    from django.core.management import call_command

    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=1)
    admins = set(Group.objects.get(name="Admins").permissions.values_list("codename", flat=True))
    assert {"can_overturn", "change_queue", "change_reasoncode", "view_decision"} <= admins
    assert {"change_effectjob", "view_reviewitem", "view_chainverification"} <= admins
    assert not admins & {"add_decision", "change_decision", "delete_decision"}
    assert not admins & {"change_applieddecision", "delete_itemevent", "change_reviewitem"}
    reviewers = Group.objects.get(name="Reviewers")
    assert not reviewers.permissions.exists()
    assert not reviewers.user_set.filter(is_staff=True).exists()


def test_staff_who_may_only_view_cannot_retire_a_code(queue, viewer):
    verified = ReasonCode.objects.get(queue=queue, verdict="approve", code="verified")
    client_for(viewer).post(
        reverse("admin:queue_app_reasoncode_changelist"),
        {"action": "retire", "_selected_action": [verified.pk]},
    )
    verified.refresh_from_db()
    assert verified.retired_at is None
