"""A new user can find their way: to /ops/ from admin, and back from a refusal."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from queue_app.models import Decision
from tests.conftest import make_items

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


def test_a_reviewer_signed_out_mid_decision_lands_on_words_not_a_blank_page(queue, alice):
    (item,) = make_items(queue, 1)
    client = Client()
    to_login = client.post(f"/items/{item.pk}/decide/", {"verdict": "approve"})
    assert to_login.status_code == 302 and "/accounts/login/" in to_login["Location"]

    back = client.post(
        to_login["Location"], {"username": "alice", "password": "pw-alice"}, follow=True
    )

    assert back.redirect_chain[-1][0] == f"/items/{item.pk}/decide/"
    assert back.status_code == 405 and back["Allow"] == "POST"
    page = back.content.decode()
    assert "Nothing was recorded" in page
    assert 'href="/">Back to my queues</a>' in page
    assert not Decision.objects.exists()


@pytest.mark.parametrize("path", ["/queues/kyc/next/", "/items/1/release/", "/items/1/renew/"])
def test_the_other_buttons_explain_themselves_too(path, alice):
    response = _client(alice).get(path)
    assert response.status_code == 405
    assert "Nothing was recorded" in response.content.decode()
