"""Migrations 0025 and 0026: sessions move to queue_app_session, and the old table is emptied.

0025 copies the live sessions, each with its user's id: nobody is signed out by the deploy, a
session signed in before it still signs its user in after it. 0026 empties django_session,
which 0025 left holding copies of every session, and leaves the sessions in use alone. Run for
real, with the schema editor Django's migrate uses, on rows written the way the old store
wrote them.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore as OldStore
from django.contrib.sessions.models import Session as OldSession
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from queue_app.models import ReviewSession

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("queue_app", "0024_item_evidence_hash")]
AFTER = [("queue_app", "0025_sessions_with_user")]
AFTER_0026 = [("queue_app", "0026_empty_retired_sessions")]


def migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def executor_leaf():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@contextmanager
def schema_at(target):
    """The schema as it was at target; the suite gets the newest schema back afterwards."""
    migrate(target)
    try:
        yield
    finally:
        migrate(executor_leaf())


@pytest.fixture
def before_0025():
    with schema_at(BEFORE):
        yield


@pytest.fixture
def before_0026():
    with schema_at(AFTER):
        yield


def _old_session(data: dict, *, expires_in: timedelta) -> str:
    store = OldStore()
    store.update(data)
    store.set_expiry(timezone.now() + expires_in)
    store.save()
    return store.session_key


def test_live_sessions_carry_over_with_their_user_and_expired_ones_stay_behind(before_0025, alice):
    key = _old_session(
        {
            "_auth_user_id": str(alice.pk),
            "_auth_user_backend": "queue_app.identity.backends.PasswordBackend",
            "_auth_user_hash": alice.get_session_auth_hash(),
        },
        expires_in=timedelta(minutes=20),
    )
    anonymous = _old_session({"note": "no one"}, expires_in=timedelta(minutes=20))
    expired = _old_session({"_auth_user_id": str(alice.pk)}, expires_in=timedelta(minutes=-1))

    migrate(AFTER)

    carried = {s.session_key: s.user_id for s in ReviewSession.objects.all()}
    assert carried[key] == alice.pk
    assert carried[anonymous] is None
    assert expired not in carried
    assert OldSession.objects.filter(session_key=expired).exists()

    # The browser holding the old cookie is still signed in. /healthz, not a console page: the
    # code is the newest while the schema stands at 0025, and only the session's read is tested.
    browser = Client()
    browser.cookies[settings.SESSION_COOKIE_NAME] = key
    assert browser.get("/healthz").wsgi_request.user == alice


def test_backwards_the_live_sessions_go_back(alice):
    new = ReviewSession.objects.create(
        session_key="k" * 32,
        session_data=OldStore().encode({"_auth_user_id": str(alice.pk)}),
        expire_date=timezone.now() + timedelta(minutes=20),
        user=alice,
    )
    with schema_at(AFTER):  # 0026 backwards deletes nothing
        assert ReviewSession.objects.filter(session_key=new.session_key).exists()
    with schema_at(BEFORE):
        assert OldSession.objects.get(session_key=new.session_key).get_decoded() == {
            "_auth_user_id": str(alice.pk)
        }


def test_0026_empties_the_old_table_and_the_sessions_in_use_stay(before_0026, client, alice):
    signed_in = {"_auth_user_id": str(alice.pk)}
    _old_session(signed_in, expires_in=timedelta(minutes=20))  # 0025's copy of a live session
    _old_session(signed_in, expires_in=timedelta(minutes=-1))
    client.force_login(alice)
    in_use = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert OldSession.objects.count() == 2

    migrate(AFTER_0026)

    assert not OldSession.objects.exists()
    assert ReviewSession.objects.get(session_key=in_use).user_id == alice.pk
    assert client.get("/healthz").wsgi_request.user == alice
