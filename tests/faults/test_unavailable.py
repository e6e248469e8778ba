"""With the database refusing connections, pages answer 503 in words, then recover by themselves."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from queue_app.api.auth import issue_api_client
from tests.conftest import make_items
from tests.faults.conftest import assert_friendly_page

pytestmark = pytest.mark.django_db(transaction=True)


def test_console_pages_answer_a_friendly_503_and_recover(database_down, alice, queue):
    (item,) = make_items(queue, 1)
    client = Client()
    client.force_login(alice)

    with database_down():
        home = client.get("/")
        item_page = client.get(f"/items/{item.pk}/")
        next_item = client.post(f"/queues/{queue.slug}/next/")

    for response in (home, item_page, next_item):
        assert_friendly_page(response)
    assert f'href="/items/{item.pk}/"' in item_page.content.decode()  # retry the same page
    assert 'href="/"' in next_item.content.decode()  # a form post retries from home
    # Nothing restarted: the next request opens a fresh connection.
    assert client.get("/").status_code == 200
    assert client.post(f"/queues/{queue.slug}/next/").status_code == 302


def test_the_login_and_ops_pages_answer_a_friendly_503(database_down, supervisor):
    client = Client()
    client.force_login(supervisor)

    with database_down():
        ops = client.get("/ops/")
        login = Client().post("/accounts/login/", {"username": "sam", "password": "pw-sam"})

    assert_friendly_page(ops)
    assert_friendly_page(login)
    assert client.get("/ops/").status_code == 200


def test_the_api_answers_503_in_its_error_shape(database_down, queue):
    _client, token = issue_api_client(
        name="upstream", can_intake=True, can_adjudicate=True, queues=[queue]
    )
    api = Client(headers={"Authorization": f"Bearer {token}"})

    with database_down():
        lease = api.post(
            f"/api/v1/queues/{queue.slug}/leases",
            {"batch_size": 1},
            content_type="application/json",
        )

    assert lease.status_code == 503
    assert lease.json() == {
        "error": {"code": "unavailable", "message": "The database is unavailable.", "details": None}
    }
    assert b"Traceback" not in lease.content
    assert api.get(f"/api/v1/queues/{queue.slug}/leases").status_code == 405  # routing alive
    recovered = api.post(
        f"/api/v1/queues/{queue.slug}/leases", {"batch_size": 1}, content_type="application/json"
    )
    assert recovered.status_code == 200, recovered.content


def test_the_session_guards_are_set_on_app_connections(settings):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('idle_in_transaction_session_timeout', 'statement_timeout', 'jit')"
        )
        guards = dict(cursor.fetchall())
    assert guards == {
        "idle_in_transaction_session_timeout": str(settings.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS),
        "statement_timeout": str(settings.DB_STATEMENT_TIMEOUT_MS),
        # JIT compiling a page's statement cost more than running it (B10, DB_JIT).
        "jit": "off",
    }
