"""The decision list says whether the hash chain verified, and when."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.urls import reverse

from queue_app.chain import seal_all, verify_chain
from tests.admin.conftest import client_for

pytestmark = pytest.mark.django_db


def _banner(client) -> str:
    page = client.get(reverse("admin:queue_app_decision_changelist")).content.decode()
    start = page.index('id="chain-status"')
    return page[start : page.index("</ul>", start)]


def test_it_says_when_the_chain_was_never_verified(compliance):
    assert "never been verified" in _banner(client_for(compliance))


def test_it_shows_the_last_verification(approved, compliance):
    verify_chain()
    banner = _banner(client_for(compliance))
    assert 'class="success"' in banner
    assert "Decision chain verified: 1 decisions intact." in banner


def test_it_shows_a_broken_chain_as_an_error(approved, compliance):
    seal_all()
    with transaction.atomic(), connection.cursor() as cursor:
        # Tamper below the application, as an attacker with table access would.
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute("UPDATE queue_app_decision SET note = 'edited' WHERE id = %s", [approved.pk])
    assert not verify_chain().ok
    banner = _banner(client_for(compliance))
    assert 'class="error"' in banner
    assert f"Decision chain broken at decision {approved.pk}" in banner
