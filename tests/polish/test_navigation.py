"""A new user can find their way: to /ops/ from admin, and back from a refusal."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_admin_pages_link_staff_to_operations(supervisor):
    page = _client(supervisor).get(reverse("admin:index")).content.decode()
    assert f'<a href="{reverse("ops:dashboard")}">Operations</a>' in page


def test_a_reviewer_refused_operations_is_told_why_and_shown_the_way_back(alice):
    response = _client(alice).get(reverse("ops:dashboard"))

    assert response.status_code == 403
    page = response.content.decode()
    assert "Operations pages are for staff." in page
    assert f'href="{reverse("home")}">Back to my queues</a>' in page
    assert "Review Console" in page


def test_the_console_does_not_offer_operations_to_reviewers(alice):
    page = _client(alice).get(reverse("home")).content.decode()
    assert reverse("ops:dashboard") not in page


@pytest.mark.parametrize("url", ["admin:index", "home", "login", "ops:dashboard"])
def test_every_page_names_its_icon(url, supervisor):
    page = _client(supervisor).get(reverse(url)).content.decode()
    assert '<link rel="icon" href="/static/console/favicon.svg" type="image/svg+xml">' in page


def test_the_icon_is_served(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "never-collected"
    response = Client().get("/static/console/favicon.svg")
    assert response.status_code == 200
    assert b"<svg" in b"".join(response.streaming_content)
