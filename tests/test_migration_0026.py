"""Migration 0026 empties django_session, which 0025 left holding copies of every session.

Run for real, with the schema editor Django's migrate uses: the retired table ends up empty,
and the sessions in use (queue_app_session) are untouched, still signing their users in.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore as OldStore
from django.contrib.sessions.models import Session as OldSession
from django.utils import timezone

from queue_app.models import ReviewSession
from tests.test_migration_0025 import executor_leaf, migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("queue_app", "0025_sessions_with_user")]
AFTER = [("queue_app", "0026_empty_retired_sessions")]


@pytest.fixture
def before_0026():
    """The schema as 0025 left it; the suite gets the newest schema back afterwards."""
    migrate(BEFORE)
    yield
    migrate(executor_leaf())


def _retired_row(data: dict, *, expires_in: timedelta) -> str:
    store = OldStore()
    store.update(data)
    store.set_expiry(timezone.now() + expires_in)
    store.save()
    return store.session_key


def test_the_retired_table_is_emptied_and_the_sessions_in_use_stay(before_0026, client, alice):
    signed_in = {"_auth_user_id": str(alice.pk)}
    _retired_row(signed_in, expires_in=timedelta(minutes=20))
    _retired_row(signed_in, expires_in=timedelta(minutes=-1))
    client.force_login(alice)
    in_use = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert OldSession.objects.count() == 2

    migrate(AFTER)

    assert not OldSession.objects.exists()
    assert ReviewSession.objects.get(session_key=in_use).user_id == alice.pk
    assert client.get("/").wsgi_request.user == alice


def test_backwards_nothing_is_deleted(alice):
    live = ReviewSession.objects.create(
        session_key="k" * 32,
        session_data=OldStore().encode({"_auth_user_id": str(alice.pk)}),
        expire_date=timezone.now() + timedelta(minutes=20),
        user=alice,
    )
    try:
        migrate(BEFORE)
        assert ReviewSession.objects.filter(session_key=live.session_key).exists()
    finally:
        migrate(executor_leaf())
