"""The item page's polish in a real browser: no preselected reject reason, evidence
warnings, release skip, a refusal that names a release, and info messages that do not wear the
success tick."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from queue_app.models import Decision, EvidenceRule, ReasonCode, ReviewItem
from queue_app.services import create_item
from tests.conftest import make_items, screenshot
from tests.console.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ITEM_URL = re.compile(r".*/items/(\d+)/$")


def _open_next(page: Page, live_server, queue_name: str = "Kyc") -> int:
    page.goto(f"{live_server.url}/")
    page.get_by_role("button", name=f"Next item in {queue_name}").click()
    page.wait_for_url(ITEM_URL)
    return int(ITEM_URL.match(page.url).group(1))


def test_r_then_enter_records_nothing_and_the_form_asks_for_a_reason(
    page: Page, live_server, alice, queue
):
    ReasonCode.objects.filter(queue=queue, verdict="approve", code="verified").update(
        is_default=True
    )
    (item,) = make_items(queue, 1)
    browser_login(page, live_server, "alice")
    _open_next(page, live_server)

    page.keyboard.press("r")
    expect(page.locator("#verdict-reject")).to_be_checked()
    expect(page.get_by_label("Reason")).to_have_value("")
    expect(page.locator("#reason-help")).to_contain_text("Choose a reason")
    page.keyboard.press("Enter")
    expect(page.locator("#reason-missing")).to_be_visible()
    expect(page.locator("#reason-missing")).to_contain_text("Choose a reason for your verdict")
    screenshot(page, "console-choose-a-reason")
    # A click on Submit is stopped by the browser, and the page says why.
    page.get_by_role("button", name="Submit decision").click()
    expect(page.locator("#reason-missing")).to_be_visible()
    assert page.url == f"{live_server.url}/items/{item.pk}/"
    assert not Decision.objects.exists()

    # The queue's safe default for approve is filled in; choosing a reason hides the note.
    page.keyboard.press("a")
    expect(page.get_by_label("Reason")).to_have_value("verified")
    expect(page.locator("#reason-missing")).to_be_hidden()
    page.keyboard.press("r")
    expect(page.get_by_label("Reason")).to_have_value("")
    page.get_by_label("Reason").select_option("fraud")
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(f"{live_server.url}/")
    decision = Decision.objects.select_related("reason_code").get()
    assert (decision.verdict, decision.reason_code.code) == ("reject", "fraud")


def test_the_item_page_warns_about_fields_the_queue_rules_flag(
    page: Page, live_server, alice, queue
):
    for path, test, value, message in [
        ("document.expires", "date_past", "", "Document has expired"),
        ("provider.document_authenticity", "in_list", "fail", "Document authenticity failed"),
        ("provider.liveness_score", "below", "0.5", "Liveness score below 0.5"),
        ("provider.face_match", "below", "0.5", "Face match below 0.5"),
    ]:
        EvidenceRule.objects.create(queue=queue, path=path, test=test, value=value, message=message)
    create_item(
        queue=queue,
        subject="KYC check — Amara Okafor",
        payload={
            "applicant": {"name": "Amara Okafor", "nationality": "NG"},
            "document": {"type": "passport", "number": "P48213377", "expires": "2024-10-31"},
            "provider": {
                "name": "VerifyCo",
                "liveness_score": Decimal("0.40"),
                "document_authenticity": "fail",
                "face_match": "n/a",  # cannot be compared: no warning, no error
            },
        },
        idempotency_key="amara",
    )
    browser_login(page, live_server, "alice")
    _open_next(page, live_server)

    warnings = page.locator(".evidence-warnings")
    expect(warnings).to_contain_text("3 warnings")
    expect(warnings.locator("li")).to_have_count(3)
    expect(warnings).to_contain_text("Document has expired")
    expect(warnings).to_contain_text("Document authenticity failed")
    expect(warnings).to_contain_text("Liveness score below 0.5")
    expect(warnings).not_to_contain_text("Face match")
    # The warnings come first in the evidence, above the fields.
    assert page.evaluate(
        "document.querySelector('.evidence-warnings').compareDocumentPosition("
        "document.querySelector('.evidence-details')) & Node.DOCUMENT_POSITION_FOLLOWING"
    )
    for path, words in [
        ("document.expires", "Document has expired"),
        ("provider.liveness_score", "Liveness score below 0.5"),
    ]:
        row = page.locator(f'.evidence-details .ev-row[data-path="{path}"]')
        expect(row).to_have_class(re.compile(r"\bev-warning\b"))
        expect(row).to_contain_text(words)
    expect(page.locator('.ev-row[data-path="document.number"]')).not_to_have_class(
        re.compile(r"\bev-warning\b")
    )
    screenshot(page, "console-item-warnings")


def test_release_then_next_gives_other_work_and_says_so_as_information(
    page: Page, live_server, alice, queue
):
    first, second = make_items(queue, 2)
    browser_login(page, live_server, "alice")
    assert _open_next(page, live_server) == first.pk
    page.keyboard.press("s")
    page.wait_for_url(f"{live_server.url}/")
    message = page.locator(".messagelist li", has_text=f"Item #{first.pk} is back in Kyc.")
    expect(message).to_have_class("info")
    background = message.evaluate("el => getComputedStyle(el).backgroundImage")
    assert "icon-unknown" in background and "icon-yes" not in background

    # Not the same item again: the released one is for someone else first.
    assert _open_next(page, live_server) == second.pk
    page.keyboard.press("s")
    page.wait_for_url(f"{live_server.url}/")
    # Both released: the first comes back, as nothing else is waiting for her.
    assert _open_next(page, live_server) == first.pk


def test_nothing_waiting_is_information_not_success(page: Page, live_server, alice, queue):
    # The home page offers no Next item on an empty queue, so the queue empties under the
    # reviewer: the decision on its last item finds nothing next.
    make_items(queue, 1)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Kyc").click()
    page.locator("label[for=verdict-approve]").click()
    page.get_by_label("Reason").select_option("verified")
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(f"{live_server.url}/")
    message = page.locator(".messagelist li", has_text="There is nothing waiting")
    expect(message).to_have_class("info")
    background = message.evaluate("el => getComputedStyle(el).backgroundImage")
    assert "icon-yes" not in background


def test_a_release_in_another_tab_is_named_when_the_first_tab_submits(
    browser, live_server, alice, queue
):
    item, _ = make_items(queue, 2)
    context = browser.new_context(viewport={"width": 1366, "height": 860})
    first_tab = context.new_page()
    browser_login(first_tab, live_server, "alice")
    assert _open_next(first_tab, live_server) == item.pk
    second_tab = context.new_page()
    second_tab.goto(f"{live_server.url}/items/{item.pk}/")
    second_tab.get_by_role("button", name="Release").click()
    second_tab.wait_for_url(f"{live_server.url}/")

    first_tab.locator("label[for=verdict-approve]").click()
    first_tab.get_by_label("Reason").select_option("verified")
    first_tab.get_by_role("button", name="Submit decision").click()
    expect(first_tab.locator(".messagelist")).to_contain_text(
        "You released this item (perhaps in another tab), so it went back to the queue."
    )
    expect(first_tab.locator(".messagelist")).not_to_contain_text("reassigned")
    assert not Decision.objects.exists()
    assert ReviewItem.objects.get(pk=item.pk).state == "pending"
    context.close()
