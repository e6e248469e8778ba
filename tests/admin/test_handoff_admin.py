"""The item's admin page shows the escalation hand-off both ways."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queue_app.services import claim_next, escalate_abandoned
from tests.admin.conftest import client_for
from tests.conftest import backdate_lease, make_items
from tests.test_handoff import NOTE, _escalate

pytestmark = pytest.mark.django_db


def _page(user, item_id: int) -> str:
    response = client_for(user).get(reverse("admin:queue_app_reviewitem_change", args=[item_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_escalation_links_to_its_origin_and_decision_and_back(queue, alice, viewer):
    make_items(queue, 1)
    decision, opened = _escalate(queue, alice)
    page = _page(viewer, opened.pk)
    origin_url = reverse("admin:queue_app_reviewitem_change", args=[decision.item_id])
    decision_url = reverse("admin:queue_app_decision_change", args=[decision.pk])
    assert "Escalated by <strong>alice</strong>" in page
    assert f'href="{origin_url}"' in page and f'href="{decision_url}"' in page
    assert NOTE in page and "Reason: policy_gap" in page
    assert "Not to be leased or decided by: alice" in page

    origin = _page(viewer, decision.item_id)
    opened_url = reverse("admin:queue_app_reviewitem_change", args=[opened.pk])
    assert f'Escalated to <a href="{opened_url}">item #{opened.pk}</a>' in origin


def test_a_moved_item_names_who_held_it(queue, alice, viewer):
    item = make_items(queue, 1)[0]
    for _ in range(queue.escalation_threshold):
        backdate_lease(claim_next(queue=queue, reviewer=alice).pk)
    escalate_abandoned()
    page = _page(viewer, item.pk)
    assert "Moved here from Kyc" in page and "held by alice" in page


def test_an_ordinary_item_says_so(queue, viewer):
    item = make_items(queue, 1)[0]
    assert "Not an escalation, and not escalated." in _page(viewer, item.pk)
