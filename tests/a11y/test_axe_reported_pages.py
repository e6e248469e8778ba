"""The pages axe found violations on, checked in light and dark at phone and laptop widths.

Each test puts one page in the state it was measured in (a check waiting on home, a QA task,
a queue with inline rows, an item with a warning, the API docs), then asks axe in each of the
four combinations: zero WCAG 2.1 A/AA violations (tests/accessibility.py).
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from queue_app.models import CheckPolicy, EvidenceRule, HoldReason
from queue_app.services import create_item
from tests.accessibility import assert_accessible
from tests.console.conftest import browser_login
from tests.lanes.conftest import decide_one

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"phone": (390, 844), "laptop": (1366, 768)}
THEMES = ("light", "dark")


def assert_accessible_everywhere(page: Page, what: str) -> None:
    """Run axe on the page (reloaded) in light and dark, at phone and laptop widths."""
    for theme in THEMES:
        page.emulate_media(color_scheme=theme)
        for name, (width, height) in VIEWPORTS.items():
            page.set_viewport_size({"width": width, "height": height})
            page.reload()
            assert_accessible(page, f"{what} ({theme}, {name} {width}x{height})")


def test_home_with_a_check_waiting(page: Page, live_server, checked_queue, alice, carol):
    decide_one(checked_queue, alice, variance_amount="1500.00")
    browser_login(page, live_server, "carol")
    # Found by its place, not its name: the name is what axe checks (label in name).
    expect(page.locator("#my-lanes .next-button")).to_have_text("Next check")
    assert_accessible_everywhere(page, "My queues with a check waiting")


def test_a_qa_task(page: Page, live_server, queue, alice, carol):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice, verdict="reject", reason="document_expired")
    browser_login(page, live_server, "carol")
    page.get_by_role("button", name="Next QA in Kyc").click()
    page.wait_for_url(re.compile(r".*/lanes/\d+/$"))
    expect(page.locator("#evidence-title")).to_contain_text("(as decided)")
    assert_accessible_everywhere(page, "a QA task")


def test_an_item_with_a_warning(page: Page, live_server, queue, alice):
    EvidenceRule.objects.create(
        queue=queue, path="score", test="below", value="0.5", message="Score below 0.5"
    )
    create_item(queue=queue, subject="low", payload={"score": "0.2"}, idempotency_key="low")
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    page.wait_for_url(re.compile(r".*/items/\d+/$"))
    expect(page.locator(".ev-warning-text")).to_contain_text("Score below 0.5")
    assert_accessible_everywhere(page, "an item with a warning")


def test_the_queue_admin_page_with_inline_rows(page: Page, live_server, root, queue):
    from tests.a11y.test_axe_pages import staff_second_factor

    EvidenceRule.objects.create(
        queue=queue, path="score", test="below", value="0.5", message="Score below 0.5"
    )
    HoldReason.objects.create(queue=queue, code="docs", label="Awaiting documents")
    CheckPolicy.objects.create(
        queue=queue, verdict="approve", path="amount", threshold=Decimal("1000.00")
    )
    browser_login(page, live_server, "root")
    staff_second_factor(page, f"{live_server.url}/admin/queue_app/queue/{queue.pk}/change/")
    expect(page.get_by_label("Path (row 1)").first).to_have_value("score")
    assert_accessible_everywhere(page, "the queue admin page")


def test_the_api_docs(page: Page, live_server):
    page.goto(f"{live_server.url}/api/v1/docs")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Review Console API")
    assert_accessible_everywhere(page, "the API documentation")
