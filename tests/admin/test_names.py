"""The admin names things as the README does."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from tests.admin.conftest import client_for

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[2] / "README.md"


def test_api_clients_are_spelled_as_in_the_readme(root):
    client = client_for(root)

    index = client.get(reverse("admin:index")).content.decode()
    listing = client.get(reverse("admin:queue_app_apiclient_changelist")).content.decode()

    assert "*API clients*" in README.read_text()
    assert ">API clients</a>" in index
    assert "Api clients" not in index and "Api client" not in listing
    assert "Select API client to change" in listing
