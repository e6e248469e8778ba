"""The three display policies in a real browser: what is on the page, that nothing in the form
is chosen from the suggestion, and what the decision records."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from queue_app.models import Decision, ItemEvent, Queue
from tests.accessibility import assert_accessible
from tests.console.conftest import browser_login
from tests.suggestions.conftest import suggested_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ITEM_URL = re.compile(r".*/items/(\d+)/$")


def _open_next(browser, live_server) -> Page:
    context = browser.new_context(viewport={"width": 1366, "height": 860})
    page = context.new_page()
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(ITEM_URL)
    return page


def _nothing_chosen(page: Page) -> None:
    """No verdict checked and no reason selected: the suggestion fills in nothing."""
    expect(page.locator("input[name=verdict]:checked")).to_have_count(0)
    expect(page.get_by_label("Reason")).to_have_value("")


def _submit(page: Page, verdict: str, reason: str, live_server) -> Decision:
    if not page.locator(f"#verdict-{verdict}").is_checked():
        page.locator(f"label[for=verdict-{verdict}]").click()
    page.get_by_label("Reason").select_option(reason)
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(f"{live_server.url}/")
    return Decision.objects.get()


def _policy(queue: Queue, how: str) -> None:
    Queue.objects.filter(pk=queue.pk).update(suggestion_display=how)


def test_shown_the_suggestion_is_with_the_evidence_and_chooses_nothing(
    browser, live_server, alice, queue
):
    _policy(queue, "shown")
    suggested_item(queue, "b1")
    page = _open_next(browser, live_server)
    panel = page.locator("#suggestion-panel")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("Suggests reject")
    expect(panel).to_contain_text("fraud")
    expect(panel).to_contain_text("0.93")
    expect(panel).to_contain_text("fraud-score 2026.11")
    expect(panel.locator("tbody tr")).to_have_count(2)
    expect(panel).to_contain_text("ip_country_mismatch")
    expect(page.locator("#suggestion-reveal")).to_have_count(0)
    _nothing_chosen(page)
    assert_accessible(page, "an item page showing a suggestion")
    decision = _submit(page, "approve", "verified", live_server)
    assert decision.suggestion_view == "shown"
    assert decision.suggestion_shown_at is not None
    assert decision.suggestion_shown_at <= decision.created_at
    assert decision.suggestion_followed is False


def test_on_request_revealed_with_the_key_before_choosing(browser, live_server, alice, queue):
    item = suggested_item(queue, "b2")  # on_request: the default
    page = _open_next(browser, live_server)
    expect(page.locator("#suggestion-panel")).to_be_hidden()
    expect(page.get_by_role("button", name="Show suggestion")).to_be_visible()
    assert_accessible(page, "an item page offering its suggestion on request")
    assert "fraud-score" not in page.locator("#suggestion").inner_text()
    # The key is in the shortcut help.
    page.keyboard.press("?")
    expect(page.locator("#shortcut-help")).to_contain_text("Show the machine suggestion")
    page.keyboard.press("?")
    page.keyboard.press("m")
    expect(page.locator("#suggestion-panel")).to_be_visible()
    expect(page.locator("#suggestion-panel")).to_contain_text("fraud-score 2026.11")
    expect(page.locator("#suggestion-reveal")).to_have_count(0)
    _nothing_chosen(page)
    decision = _submit(page, "reject", "fraud", live_server)
    event = ItemEvent.objects.get(item=item, kind="suggestion_revealed")
    assert event.detail["after_choice"] is False
    assert decision.suggestion_view == "revealed_before_choice"
    assert decision.suggestion_shown_at == event.at
    assert decision.suggestion_followed is True


def test_on_request_shown_once_a_verdict_is_chosen(browser, live_server, alice, queue):
    item = suggested_item(queue, "b3")
    page = _open_next(browser, live_server)
    expect(page.locator("#suggestion-panel")).to_be_hidden()
    page.keyboard.press("a")  # choose approve: the suggestion follows the choice
    expect(page.locator("#suggestion-panel")).to_be_visible()
    expect(page.locator("#suggestion-panel")).to_contain_text("Suggests reject")
    # Still the reviewer's choice, and no reason picked for them.
    expect(page.locator("#verdict-approve")).to_be_checked()
    expect(page.get_by_label("Reason")).to_have_value("")
    decision = _submit(page, "approve", "verified", live_server)
    event = ItemEvent.objects.get(item=item, kind="suggestion_revealed")
    assert event.detail == {
        "lease_token": str(decision.lease_token),
        "after_choice": True,
        "chosen_verdict": "approve",
    }
    assert decision.suggestion_view == "revealed_after_choice"
    assert decision.suggestion_shown_at == event.at
    assert decision.suggestion_followed is False


def test_hidden_nothing_is_on_the_page(browser, live_server, alice, queue):
    _policy(queue, "hidden")
    suggested_item(queue, "b4")
    page = _open_next(browser, live_server)
    expect(page.locator("#suggestion")).to_have_count(0)
    assert "fraud-score" not in page.content()
    page.keyboard.press("m")  # does nothing here
    _nothing_chosen(page)
    decision = _submit(page, "reject", "fraud", live_server)
    assert (decision.suggestion_view, decision.suggestion_shown_at) == ("not_shown", None)
    assert decision.suggestion_followed is True
    assert not ItemEvent.objects.filter(kind="suggestion_revealed").exists()
