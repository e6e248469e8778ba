"""Decisions are read-only in the admin for everyone, superusers included."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queue_app.models import Decision
from tests.admin.conftest import client_for

pytestmark = pytest.mark.django_db


def test_a_superuser_cannot_change_a_decision(approved, root):
    client = client_for(root)
    url = reverse("admin:queue_app_decision_change", args=[approved.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    response = client.post(url, {"verdict": "reject", "note": "rewritten"})
    assert response.status_code == 403
    stored = Decision.objects.get(pk=approved.pk)
    assert (stored.verdict, stored.note) == ("approve", "looks fine")


def test_a_superuser_cannot_delete_a_decision(approved, root):
    client = client_for(root)
    url = reverse("admin:queue_app_decision_delete", args=[approved.pk])
    assert client.get(url).status_code == 403
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert Decision.objects.filter(pk=approved.pk).exists()


def test_there_is_no_delete_action_and_no_add_page(approved, root):
    client = client_for(root)
    changelist = client.get(reverse("admin:queue_app_decision_changelist"))
    actions = [name for name, _ in changelist.context["action_form"].fields["action"].choices]
    assert "delete_selected" not in actions
    assert "export_csv" in actions
    response = client.post(
        reverse("admin:queue_app_decision_changelist"),
        {"action": "delete_selected", "_selected_action": [approved.pk], "post": "yes"},
    )
    assert Decision.objects.filter(pk=approved.pk).exists()
    assert response.status_code in (200, 302)
    assert client.get(reverse("admin:queue_app_decision_add")).status_code == 403


def test_applied_decisions_and_effect_jobs_are_read_only_too(approved, root):
    client = client_for(root)
    job_url = reverse("admin:queue_app_effectjob_change", args=[approved.pk])
    assert client.get(job_url).status_code == 200
    assert client.post(job_url, {"dead": "on"}).status_code == 403
    assert client.get(reverse("admin:queue_app_effectjob_add")).status_code == 403
    assert client.get(reverse("admin:queue_app_applieddecision_add")).status_code == 403
    assert client.get(reverse("admin:queue_app_reviewitem_add")).status_code == 403
