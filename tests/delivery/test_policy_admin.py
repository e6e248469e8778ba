"""The appeal window and the out-of-court text on the statement policy, in the admin."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queue_app.models import StatementPolicy
from queue_app.models.access_history import StatementPolicyEvent
from tests.admin.conftest import client_for, compliance  # noqa: F401 (a fixture)
from tests.conftest import make_queue
from tests.statements.test_admin import _policy_form

pytestmark = pytest.mark.django_db


def test_the_window_is_six_months_unless_set_and_recorded(compliance):  # noqa: F811
    queue = make_queue("posts")
    client = client_for(compliance)
    response = client.post(reverse("admin:queue_app_statementpolicy_add"), _policy_form(queue.pk))
    assert response.status_code == 302, response.context["adminform"].form.errors
    policy = StatementPolicy.objects.get(queue=queue)
    assert policy.appeal_window_months == 6

    response = client.post(
        reverse("admin:queue_app_statementpolicy_change", args=[policy.pk]),
        _policy_form(queue.pk, appeal_window_months="12", out_of_court_settlement="Disputes Board"),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    policy.refresh_from_db()
    assert (policy.appeal_window_months, policy.out_of_court_settlement) == (12, "Disputes Board")
    event = StatementPolicyEvent.objects.filter(pgh_obj=policy).latest("pgh_id")
    assert event.appeal_window_months == 12
    assert event.out_of_court_settlement == "Disputes Board"


def test_a_window_shorter_than_six_months_is_refused(compliance):  # noqa: F811
    queue = make_queue("posts")
    response = client_for(compliance).post(
        reverse("admin:queue_app_statementpolicy_add"),
        _policy_form(queue.pk, appeal_window_months="3"),
    )
    assert response.status_code == 200
    assert "appeal_window_months" in response.context["adminform"].form.errors
    assert not StatementPolicy.objects.exists()
