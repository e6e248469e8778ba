"""Sessions end after SESSION_IDLE_MINUTES without a request; any request, the heartbeat too,
pushes the end forward."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from queue_app.services import claim_next
from tests.conftest import make_items

pytestmark = pytest.mark.django_db


def _session_of(client: Client) -> Session:
    return Session.objects.get(session_key=client.cookies[settings.SESSION_COOKIE_NAME].value)


def _age_left(client: Client) -> timedelta:
    return _session_of(client).expire_date - timezone.now()


def test_the_idle_limit_is_thirty_minutes_by_default():
    assert settings.SESSION_COOKIE_AGE == 30 * 60
    assert settings.SESSION_SAVE_EVERY_REQUEST is True


def test_it_ends_a_session_left_idle(alice_client: Client):
    Session.objects.filter(pk=_session_of(alice_client).pk).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    response = alice_client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_any_page_pushes_the_idle_limit_forward(alice_client: Client):
    Session.objects.filter(pk=_session_of(alice_client).pk).update(
        expire_date=timezone.now() + timedelta(minutes=1)
    )
    response = alice_client.get("/")
    assert response.status_code == 200
    assert response.cookies[settings.SESSION_COOKIE_NAME]["max-age"] == 30 * 60
    assert _age_left(alice_client) > timedelta(minutes=29)


def test_the_lease_heartbeat_counts_as_activity(alice_client: Client, alice, queue):
    # A reviewer reading long evidence in a visible tab stays signed in (README, "Security").
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    Session.objects.filter(pk=_session_of(alice_client).pk).update(
        expire_date=timezone.now() + timedelta(minutes=1)
    )
    response = alice_client.post(
        f"/items/{item.pk}/renew/",
        {"lease_token": str(item.lease_token)},
        headers={"Accept": "application/json"},
    )
    assert response.json()["ok"] is True
    assert _age_left(alice_client) > timedelta(minutes=29)
