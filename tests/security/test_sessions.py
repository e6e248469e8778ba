"""Sessions end after SESSION_IDLE_MINUTES without a request; a request, the lease heartbeat too,
pushes the end forward (at most once a minute, so pages do not write the session each time)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from queue_app.identity.sessions import SessionStore
from queue_app.models import ReviewSession as Session
from queue_app.services import claim_next
from tests.conftest import make_items

pytestmark = pytest.mark.django_db


def _key(client: Client) -> str:
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def _last_extended(client: Client, *, ago: timedelta) -> None:
    """Make the session look as if it was last extended `ago`."""
    store = SessionStore(session_key=_key(client))
    store.set_expiry(timezone.now() + timedelta(seconds=settings.SESSION_COOKIE_AGE) - ago)
    store.save()


def _time_left(client: Client) -> timedelta:
    return Session.objects.get(session_key=_key(client)).expire_date - timezone.now()


def test_the_idle_limit_is_thirty_minutes_by_default():
    assert settings.SESSION_COOKIE_AGE == 30 * 60


def test_it_ends_a_session_left_idle(alice_client: Client):
    Session.objects.filter(session_key=_key(alice_client)).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    response = alice_client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_a_page_pushes_the_idle_limit_forward(alice_client: Client):
    _last_extended(alice_client, ago=timedelta(minutes=29))
    assert _time_left(alice_client) < timedelta(minutes=2)
    response = alice_client.get("/")
    assert response.status_code == 200
    assert response.cookies[settings.SESSION_COOKIE_NAME]["max-age"] >= 30 * 60 - 5
    assert _time_left(alice_client) > timedelta(minutes=29)


def test_within_a_minute_of_the_last_push_a_page_writes_no_session(alice_client: Client):
    _last_extended(alice_client, ago=timedelta(seconds=20))
    before = Session.objects.get(session_key=_key(alice_client)).expire_date
    response = alice_client.get("/")
    assert response.status_code == 200
    assert settings.SESSION_COOKIE_NAME not in response.cookies
    assert Session.objects.get(session_key=_key(alice_client)).expire_date == before


def test_the_lease_heartbeat_counts_as_activity(alice_client: Client, alice, queue):
    # A reviewer reading long evidence in a visible tab stays signed in (docs/deployment.md,
    # "Security").
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    _last_extended(alice_client, ago=timedelta(minutes=29))
    response = alice_client.post(
        f"/items/{item.pk}/renew/",
        {"lease_token": str(item.lease_token)},
        headers={"Accept": "application/json"},
    )
    assert response.json()["ok"] is True
    assert _time_left(alice_client) > timedelta(minutes=29)


def test_an_anonymous_visitor_gets_no_session_row(client: Client):
    assert client.get("/accounts/login/").status_code == 200
    assert not Session.objects.exists()


# -- how a signed-in request reads its session and user (queue_app/identity/sessions.py) --------


def test_a_deleted_session_signs_the_browser_out(alice_client: Client):
    # Signing out elsewhere, or an admin ending the session, deletes the row.
    Session.objects.filter(session_key=_key(alice_client)).delete()
    response = alice_client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_a_deactivated_user_is_signed_out_on_their_next_request(alice_client: Client, alice):
    assert alice_client.get("/").status_code == 200
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    response = alice_client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def _statements_of(client: Client, path: str = "/") -> list[str]:
    """The statements a signed-in GET sends, each as one line of text."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    connection.ensure_connection()
    # Unprepared, so that the query log keeps each statement's text (psycopg has none to give
    # for a prepared statement's execution).
    threshold = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = None
    try:
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(path).status_code == 200
    finally:
        connection.connection.prepare_threshold = threshold
    return [" ".join((q["sql"] or "").split()) for q in ctx.captured_queries]


def test_the_session_and_its_user_are_read_by_one_named_statement(alice_client: Client):
    from django.contrib.auth import get_user_model

    from queue_app.db.statements import identity as identity_sql
    from queue_app.selectors.accounts import _session_with_user_statement

    statements = _statements_of(alice_client)
    # The statement as psycopg sends it: %(name)s placeholders become $1, $2, ...
    expected = _session_with_user_statement(get_user_model())
    expected = expected.replace("%(session_key)s", "$1").replace("%(now)s", "$2")
    assert statements[0] == " ".join(expected.split())
    user_row = " ".join(identity_sql.USER_ROW.replace("%(user_id)s", "$1").split())
    assert user_row not in statements
    # Django's ORM reads of the same rows are not made as well.
    assert not any('FROM "queue_app_session"' in q for q in statements)
    assert not any('FROM "auth_user"' in q for q in statements)


def test_a_session_row_naming_another_user_than_its_data_signs_in_the_datas(
    alice_client: Client, alice, bob
):
    # The column is a shortcut to a read, never who is signed in: the data decides.
    from queue_app.db.statements import identity as identity_sql

    Session.objects.filter(session_key=_key(alice_client)).update(user=bob)
    statements = _statements_of(alice_client)
    assert " ".join(identity_sql.USER_ROW.replace("%(user_id)s", "$1").split()) in statements
    response = alice_client.get("/")
    assert response.wsgi_request.user == alice


def test_signing_in_stores_the_user_with_the_session_and_signing_out_removes_it(alice):
    client = Client()
    assert (
        client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"}).status_code
        == 302
    )
    assert Session.objects.get(session_key=_key(client)).user_id == alice.pk
    client.post("/accounts/logout/")
    assert not Session.objects.filter(user=alice).exists()


def test_a_deleted_users_sessions_go_with_them(alice_client: Client, alice):
    assert Session.objects.filter(user=alice).exists()
    alice.delete()
    assert not Session.objects.filter(user=alice.pk).exists()
    response = alice_client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_a_changed_password_still_ends_the_other_sessions(alice_client: Client, alice):
    # Django's session auth hash is checked on the user the session's read brought along.
    alice.set_password("a-new-password-for-alice")
    alice.save()
    response = alice_client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_clearsessions_deletes_the_expired_sessions_and_keeps_the_live_ones(alice_client: Client):
    # What deploy/systemd/reviewconsole-clearsessions.service runs every night.
    from django.core.management import call_command

    live = _key(alice_client)
    gone = SessionStore()
    gone["note"] = "left open on a shared machine"
    gone.set_expiry(timezone.now() - timedelta(minutes=1))
    gone.save()
    assert Session.objects.filter(session_key=gone.session_key).exists()
    call_command("clearsessions")
    assert not Session.objects.filter(session_key=gone.session_key).exists()
    assert Session.objects.filter(session_key=live).exists()
