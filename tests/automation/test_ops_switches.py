"""The stop switches on /ops/: who may press them, CSRF, and the history that records it."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from queue_app.models import AutomationSwitch, ItemState, Queue
from queue_app.selectors.access_timeline import describe, history_events
from tests.automation.conftest import arrive, suggestion
from tests.conftest import with_permission

pytestmark = pytest.mark.django_db


@pytest.fixture
def watcher(db) -> User:
    """Staff who watch /ops/ without the stop permission."""
    return User.objects.create_user(username="wendy", password="pw-wendy", is_staff=True)


@pytest.fixture
def operator(db) -> User:
    """Staff with the stop permission."""
    user = User.objects.create_user(username="olga", password="pw-olga", is_staff=True)
    return with_permission(user, "can_stop_automation")


def _client(user: User | None, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


def _queue_url(queue: Queue) -> str:
    return reverse("ops:automation_queue", args=[queue.pk])


def _stopped(queue: Queue) -> bool:
    queue.refresh_from_db()
    return queue.automation_stopped_at is not None


def test_an_operator_stops_a_queue_and_its_items_go_to_people(auto_queue, operator):
    response = _client(operator).post(_queue_url(auto_queue), {"action": "stop"}, follow=True)

    assert response.status_code == 200
    assert _stopped(auto_queue)
    assert "Automatic decisions stopped for queue Kyc" in response.content.decode()
    assert arrive(auto_queue, suggestion("approve", "0.99")).state == ItemState.PENDING


def test_a_second_press_restarts_and_the_first_time_is_kept_until_then(auto_queue, operator):
    client = _client(operator)
    client.post(_queue_url(auto_queue), {"action": "stop"})
    auto_queue.refresh_from_db()
    first = auto_queue.automation_stopped_at
    client.post(_queue_url(auto_queue), {"action": "stop"})
    auto_queue.refresh_from_db()
    assert auto_queue.automation_stopped_at == first

    client.post(_queue_url(auto_queue), {"action": "restart"})

    assert not _stopped(auto_queue)
    assert arrive(auto_queue, suggestion("approve", "0.99")).state == ItemState.DECIDED


def test_an_operator_stops_every_queue(auto_queue, operator):
    client = _client(operator)
    client.post(reverse("ops:automation_all"), {"action": "stop"})

    assert AutomationSwitch.objects.get(pk=1).stopped_at is not None
    assert not _stopped(auto_queue)  # its own switch is untouched
    assert arrive(auto_queue, suggestion("approve", "0.99")).state == ItemState.PENDING

    client.post(reverse("ops:automation_all"), {"action": "restart"})
    assert AutomationSwitch.objects.get(pk=1).stopped_at is None


def test_the_dashboard_shows_the_switches_to_an_operator(auto_queue, operator):
    html = _client(operator).get(reverse("ops:dashboard")).content.decode()

    assert 'id="automation"' in html
    assert 'data-queue="kyc" data-stopped="no"' in html
    assert f'action="{_queue_url(auto_queue)}"' in html
    assert f'action="{reverse("ops:automation_all")}"' in html


def test_the_dashboard_shows_no_button_to_staff_without_the_permission(auto_queue, watcher):
    html = _client(watcher).get(reverse("ops:dashboard")).content.decode()

    assert 'data-queue="kyc"' in html
    assert f'action="{_queue_url(auto_queue)}"' not in html
    assert f'action="{reverse("ops:automation_all")}"' not in html


@pytest.mark.parametrize("who", ["anonymous", "reviewer", "watcher"])
@pytest.mark.parametrize("scope", ["queue", "all"])
def test_nobody_else_may_press(auto_queue, alice, watcher, who, scope):
    user = {"anonymous": None, "reviewer": alice, "watcher": watcher}[who]
    url = _queue_url(auto_queue) if scope == "queue" else reverse("ops:automation_all")

    response = _client(user).post(url, {"action": "stop"})

    if who == "anonymous":
        assert response.status_code == 302
        assert "login" in response["Location"]
    else:
        assert response.status_code == 403
    assert not _stopped(auto_queue)
    assert AutomationSwitch.objects.get(pk=1).stopped_at is None


def test_a_get_presses_nothing(auto_queue, operator):
    response = _client(operator).get(_queue_url(auto_queue))

    assert response.status_code == 405
    assert not _stopped(auto_queue)


def test_a_post_without_the_csrf_token_is_refused(auto_queue, operator):
    client = _client(operator, csrf=True)

    response = client.post(_queue_url(auto_queue), {"action": "stop"})

    assert response.status_code == 403
    assert not _stopped(auto_queue)
    # The page's own form carries the token, and with it the press goes through.
    html = client.get(reverse("ops:dashboard")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token is not None
    response = client.post(
        _queue_url(auto_queue), {"action": "stop", "csrfmiddlewaretoken": token.group(1)}
    )
    assert response.status_code == 302
    assert _stopped(auto_queue)


def test_an_unknown_action_changes_nothing(auto_queue, operator):
    response = _client(operator).post(_queue_url(auto_queue), {"action": "pause"}, follow=True)

    assert "Choose stop or restart." in response.content.decode()
    assert not _stopped(auto_queue)


def test_presses_are_in_the_configuration_history_with_who_pressed(auto_queue, operator):
    client = _client(operator)
    client.post(_queue_url(auto_queue), {"action": "stop"})
    client.post(_queue_url(auto_queue), {"action": "restart"})
    client.post(reverse("ops:automation_all"), {"action": "stop"})

    rows = list(describe(history_events(actor=operator)))
    queue_rows = [r for r in rows if r.kind == "queue configuration"]
    assert [r.change.split(":")[0] for r in queue_rows] == [
        "automation_stopped_at",
        "automation_stopped_at",
    ]
    assert queue_rows[0].change.endswith("→ —")  # newest first: the restart
    assert all(r.by == f"olga (#{operator.pk})" for r in rows)
    [switch] = [r for r in rows if r.kind == "automatic decisions, all queues"]
    assert switch.subject == "stop switch for every queue"
    assert switch.change.startswith("stopped_at: — → ")

    # And the admin's access-history page shows them.
    root = User.objects.create_superuser("root", password="pw-root")
    html = _client(root).get(reverse("access-history")).content.decode()
    assert "stop switch for every queue" in html
    assert "automation_stopped_at" in html
