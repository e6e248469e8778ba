"""The overturn form in a real browser: required fields said before submit; no second overturn."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from queue_app.models import Decision
from queue_app.services import overturn_decision
from tests.conftest import screenshot
from tests.identity.browser_steps import enrol_second_factor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _admin_login(page: Page, live_server) -> None:
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "casey")
    page.fill("#id_password", "pw-casey")
    page.click("input[type=submit]")
    enrol_second_factor(page)  # staff prove a second factor before the admin
    page.wait_for_url(f"{live_server.url}/admin/")


def test_the_form_marks_required_fields_and_the_browser_asks_before_posting(
    approved, compliance, live_server, page: Page
):
    _admin_login(page, live_server)
    url = reverse("admin:queue_app_decision_overturn", args=[approved.pk])
    page.goto(f"{live_server.url}{url}")
    for label in ("Overturn reason", "Note"):
        expect(page.locator(f"label.required:has-text('{label}')")).to_contain_text("*")
    expect(page.locator("#id_note")).to_have_attribute("required", "")
    expect(page.locator("#id_reason_code")).to_have_value("")
    screenshot(page, "admin-overturn-required")

    page.get_by_role("button", name="Record overturn").click()
    # The browser refused to post: still on the form, the note flagged, nothing written.
    assert page.url == f"{live_server.url}{url}"
    assert page.evaluate("document.getElementById('id_reason_code').validity.valueMissing")
    assert Decision.objects.count() == 1


def test_an_overturned_decision_links_to_the_overturn_that_stands(
    approved, compliance, root, live_server, page: Page
):
    overturn = overturn_decision(
        decision_id=approved.pk,
        admin=root,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    _admin_login(page, live_server)
    page.goto(
        f"{live_server.url}" + reverse("admin:queue_app_decision_overturn", args=[approved.pk])
    )
    expect(page.locator("#overturn-form")).to_have_count(0)
    page.get_by_role("link", name=f"overturn #{overturn.pk}").first.click()
    page.wait_for_url(
        f"{live_server.url}" + reverse("admin:queue_app_decision_change", args=[overturn.pk])
    )
