"""/healthz: 200 when the database answers and is fully migrated, 503 otherwise."""

from __future__ import annotations

import pytest
from django.db import connection


@pytest.mark.django_db
def test_it_answers_ok_on_a_migrated_database(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_it_answers_503_when_a_migration_is_not_applied(client):
    # The migration state as a database restored from an older backup would have it: the
    # recorder no longer lists the newest queue_app migration. Rolled back with the test.
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'queue_app' AND name = '0003_apiclient'"
        )

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "reason": "migrations",
        "unapplied": ["queue_app.0003_apiclient"],
    }


@pytest.mark.django_db(transaction=True)
def test_it_answers_503_when_the_database_does_not_answer(client):
    # A real failed connection: the server refuses a database that does not exist.
    original = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = "reviewconsole_no_such_database"
    try:
        response = client.get("/healthz")
    finally:
        connection.close()
        connection.settings_dict["NAME"] = original

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "database"}
    assert b"Traceback" not in response.content
