"""The admin's settings of automatic decisions: clear errors first, the switches as actions."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from queue_app.models import AutomationSwitch, CheckPolicy, Queue
from tests.admin.conftest import client_for
from tests.admin.test_config_admin import _queue_form
from tests.conftest import with_permission

pytestmark = pytest.mark.django_db


def _add(user: User, **fields):
    return client_for(user).post(reverse("admin:queue_app_queue_add"), _queue_form(**fields))


def test_it_creates_a_queue_that_decides_automatically(compliance, machine):
    response = _add(
        compliance,
        suggestion_display="shown",
        auto_decide_above="0.95",
        auto_decide_user=machine.pk,
        auto_decide_qa_rate="5",
        **{
            "check_policies-TOTAL_FORMS": "1",
            "check_policies-0-verdict": "reject",
            "check_policies-0-path": "",
            "check_policies-0-threshold": "",
            "check_policies-0-machine_only": "on",
        },
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    queue = Queue.objects.get(slug="payments")
    assert str(queue.auto_decide_above) == "0.9500"
    assert queue.auto_decide_user == machine
    assert queue.suggestion_display == "shown"
    [policy] = CheckPolicy.objects.filter(queue=queue)
    assert policy.machine_only is True


def test_a_queue_without_a_threshold_needs_nothing_else(compliance):
    response = _add(compliance)

    assert response.status_code == 302
    queue = Queue.objects.get(slug="payments")
    assert queue.auto_decide_above is None
    assert queue.suggestion_display == "on_request"


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"auto_decide_above": "0"}, "auto_decide_above", "above 0 and at most 1"),
        ({"auto_decide_above": "1.5"}, "auto_decide_above", "above 0 and at most 1"),
        ({"auto_decide_above": "-0.2"}, "auto_decide_above", "above 0 and at most 1"),
        ({"auto_decide_user": ""}, "auto_decide_user", "recorded under a service user"),
        ({"auto_decide_qa_rate": "0"}, "auto_decide_qa_rate", "need a QA sample above 0 %"),
        ({"auto_decide_qa_rate": "101"}, "auto_decide_qa_rate", "from 0 to 100"),
    ],
)
def test_it_explains_an_incomplete_automation_setting(compliance, machine, fields, field, message):
    settings = {
        "auto_decide_above": "0.9",
        "auto_decide_user": machine.pk,
        "auto_decide_qa_rate": "5",
        **fields,
    }
    response = _add(compliance, **settings)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors.get(field, [])), errors
    assert "__all__" not in errors  # the field's own words, not the constraint's
    assert not Queue.objects.filter(slug="payments").exists()


def test_a_deactivated_automation_user_is_refused(compliance, machine):
    machine.is_active = False
    machine.save()

    response = _add(
        compliance, auto_decide_above="0.9", auto_decide_user=machine.pk, auto_decide_qa_rate="5"
    )

    assert "deactivated" in " ".join(response.context["adminform"].form.errors["auto_decide_user"])


def test_the_queue_list_stops_and_restarts_queues(compliance, auto_queue):
    client = client_for(compliance)
    url = reverse("admin:queue_app_queue_changelist")

    client.post(url, {"action": "stop_queues", "_selected_action": [auto_queue.pk]})
    auto_queue.refresh_from_db()
    assert auto_queue.automation_stopped_at is not None

    client.post(url, {"action": "restart_queues", "_selected_action": [auto_queue.pk]})
    auto_queue.refresh_from_db()
    assert auto_queue.automation_stopped_at is None


def test_the_switch_page_stops_every_queue(compliance):
    client = client_for(compliance)
    url = reverse("admin:queue_app_automationswitch_changelist")
    assert client.get(url).status_code == 200

    client.post(url, {"action": "stop_all", "_selected_action": [1]})
    assert AutomationSwitch.objects.get(pk=1).stopped_at is not None

    client.post(url, {"action": "restart_all", "_selected_action": [1]})
    assert AutomationSwitch.objects.get(pk=1).stopped_at is None


def test_staff_without_the_stop_permission_get_no_stop_action(auto_queue, machine):
    editor = User.objects.create_user("eddie", password="pw-eddie", is_staff=True)
    editor = with_permission(editor, "change_queue")
    client = client_for(editor)

    response = client.post(
        reverse("admin:queue_app_queue_changelist"),
        {"action": "stop_queues", "_selected_action": [auto_queue.pk]},
    )

    auto_queue.refresh_from_db()
    assert auto_queue.automation_stopped_at is None
    assert response.status_code in (200, 302)
    page = client.get(reverse("admin:queue_app_queue_changelist")).content.decode()
    assert "stop_queues" not in page
