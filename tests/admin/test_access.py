"""Who gets which admin pages: superuser, staff without can_overturn, reviewer."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queue_app.models import Decision
from tests.admin.conftest import client_for

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "queue",
    "reasoncode",
    "reviewitem",
    "decision",
    "applieddecision",
    "effectjob",
    "chainverification",
]


def _pages(decision: Decision) -> list[str]:
    return [reverse(f"admin:queue_app_{name}_changelist") for name in CHANGELISTS] + [
        reverse("admin:queue_app_reviewitem_change", args=[decision.item_id]),
        reverse("admin:queue_app_decision_change", args=[decision.pk]),
        reverse("admin:queue_app_queue_change", args=[decision.queue_id]),
    ]


def test_a_superuser_sees_every_page_and_the_overturn_button(approved, root):
    client = client_for(root)
    for url in _pages(approved):
        assert client.get(url).status_code == 200, url
    page = client.get(reverse("admin:queue_app_decision_change", args=[approved.pk]))
    assert b"Overturn this decision" in page.content
    overturn = client.get(reverse("admin:queue_app_decision_overturn", args=[approved.pk]))
    assert overturn.status_code == 200
    assert b"Record overturn" in overturn.content


def test_staff_without_can_overturn_can_look_but_not_overturn(approved, viewer):
    client = client_for(viewer)
    for url in _pages(approved):
        assert client.get(url).status_code == 200, url
    page = client.get(reverse("admin:queue_app_decision_change", args=[approved.pk]))
    assert b"Overturn this decision" not in page.content
    url = reverse("admin:queue_app_decision_overturn", args=[approved.pk])
    assert client.get(url).status_code == 403
    post = client.post(url, {"corrected_verdict": "reject", "reason_code": 1, "note": "x"})
    assert post.status_code == 403
    assert Decision.objects.count() == 1


def test_staff_without_can_overturn_cannot_change_configuration(approved, viewer):
    client = client_for(viewer)
    response = client.post(
        reverse("admin:queue_app_queue_change", args=[approved.queue_id]),
        {"slug": "renamed", "name": "Renamed"},
    )
    assert response.status_code == 403


def test_a_reviewer_gets_no_admin_at_all(approved, alice):
    client = client_for(alice)
    for url in [reverse("admin:index"), *_pages(approved)]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login")), url
    response = client.post(
        reverse("admin:queue_app_decision_overturn", args=[approved.pk]),
        {"corrected_verdict": "reject", "reason_code": 1, "note": "x"},
    )
    assert response.status_code == 302
    assert Decision.objects.count() == 1


def test_an_anonymous_visitor_is_sent_to_log_in(approved, client):
    response = client.get(reverse("admin:queue_app_decision_overturn", args=[approved.pk]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_the_admin_names_the_product_not_django(root):
    page = client_for(root).get(reverse("admin:index")).content.decode()
    assert "<title>Configuration and audit | Review Console admin</title>" in page
    assert "Review Console administration" in page
    assert "Django administration" not in page
