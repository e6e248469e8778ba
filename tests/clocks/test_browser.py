"""Putting an item on hold in a real browser, and seeing it come back."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from queue_app.models import ItemEvent, ReviewItem
from tests.clocks.helpers import add_hold_reasons, item, make_hold_due
from tests.console.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_puts_an_item_on_hold_and_it_comes_back(page: Page, live_server, alice, queue):
    add_hold_reasons(queue)
    due = timezone.now() + timedelta(hours=2, minutes=30)
    waiting = item(queue, "k1", subject="KYC check — Ada Lovelace", due_at=due, subject_key="C-1")

    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(f"{live_server.url}/items/{waiting.pk}/")
    expect(page.locator("#deadline")).to_contain_text(re.compile(r"Due in 2 h (29|30) min"))

    page.get_by_text("Put on hold…").click()
    page.get_by_label("Waiting for").select_option("awaiting_documents")
    back = timezone.localtime(timezone.now() + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M")
    page.get_by_label("Back on").fill(back)
    page.get_by_role("button", name="Put on hold").click()
    page.wait_for_url(f"{live_server.url}/")
    expect(page.locator(".messagelist")).to_contain_text(f"Item #{waiting.pk} is on hold until")
    # Nothing else waits, and the held item is not handed out.
    expect(page.locator("tr[data-queue=kyc] .next-button")).to_have_text("Nothing waiting")
    held = ReviewItem.objects.get(pk=waiting.pk)
    assert held.state == "held" and held.due_at > due  # the clock paused for the hold

    # Its time comes (the test moves the hold into the past rather than wait three hours).
    make_hold_due(waiting.pk)
    page.reload()
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(f"{live_server.url}/items/{waiting.pk}/")
    expect(page.locator("#lease-status")).to_contain_text("Yours for")
    assert list(
        ItemEvent.objects.filter(item_id=waiting.pk).order_by("id").values_list("kind", flat=True)
    )[-3:] == ["held", "resumed", "claimed"]
