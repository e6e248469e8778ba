"""ApiClient in Django admin: the token is shown once, only its hash is kept, revoke works."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from queue_app.api.auth import hash_token
from queue_app.models import ApiClient
from tests.api.conftest import caller_for, intake_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    root = User.objects.create_superuser("root", password="pw-root")
    client.force_login(root)
    return client


def test_creating_a_client_shows_its_token_once_and_stores_only_its_hash(admin_client, queue):
    response = admin_client.post(
        "/admin/queue_app/apiclient/add/",
        {"name": "upstream-crm", "can_intake": "on", "queues": [queue.pk]},
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    token = re.search(r'id="api-token"[^>]*>(rc_[\w-]+)<', html).group(1)
    assert "shown only this once" in html

    client = ApiClient.objects.get(name="upstream-crm")
    assert client.token_hash == hash_token(token)
    assert token.startswith(client.token_prefix)
    assert client.can_intake and not client.can_adjudicate
    assert list(client.queues.all()) == [queue]
    assert client.user.username == "api:upstream-crm"
    assert not client.user.has_usable_password()

    # The token works, and the client's page never shows it again.
    assert caller_for(token).post("/items", intake_body()).status == 201
    page = admin_client.get(f"/admin/queue_app/apiclient/{client.pk}/change/").content.decode()
    assert token not in page
    assert client.token_prefix in page


def test_revoking_from_the_list_stops_the_token(admin_client, queue):
    from tests.api.conftest import make_client

    client, token = make_client("robot", [queue])
    response = admin_client.post(
        "/admin/queue_app/apiclient/",
        {"action": "revoke", "_selected_action": [client.pk]},
        follow=True,
    )
    assert "Revoked 1 API client" in response.content.decode()
    client.refresh_from_db()
    assert client.revoked_at is not None
    assert caller_for(token).post("/items", intake_body()).status == 401


def test_clients_cannot_be_deleted_only_revoked(admin_client, queue):
    from tests.api.conftest import make_client

    client, _ = make_client("robot", [queue])
    response = admin_client.get(f"/admin/queue_app/apiclient/{client.pk}/delete/")
    assert response.status_code == 403


def test_a_name_whose_service_user_exists_is_refused_with_a_message(admin_client, queue):
    User.objects.create_user("api:crm")
    response = admin_client.post(
        "/admin/queue_app/apiclient/add/", {"name": "crm", "can_intake": "on"}
    )
    assert response.status_code == 200
    assert "already exists; choose another name" in response.content.decode()
    assert not ApiClient.objects.exists()
