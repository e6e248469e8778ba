"""Keyboard and screen reader: focus lands on the new item, the lease is announced at
thresholds (not every tick), a veiled image is revealed by key, /ops/ never reloads itself."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db.models.functions import Now
from playwright.sync_api import Page, expect

from queue_app.models import ItemEvent, ItemEventKind, ReviewItem
from queue_app.services import put_attachment
from tests.attachments.conftest import image_bytes
from tests.conftest import make_items
from tests.console.conftest import browser_login
from tests.identity.browser_steps import enrol_second_factor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ITEM_URL = re.compile(r".*/items/(\d+)/$")


def focused_id(page: Page) -> str:
    return page.evaluate("document.activeElement && document.activeElement.id")


def test_after_a_decision_focus_is_on_the_next_items_verdicts(
    page: Page, live_server, alice, queue
):
    first, second = make_items(queue, 2)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    page.wait_for_url(ITEM_URL)
    assert focused_id(page) == "verdict-group"
    # Keyboard only: a verdict, a reason, Enter.
    page.keyboard.press("a")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/items/{second.pk}/")
    expect(page.locator(".messagelist")).to_contain_text(f"on item #{first.pk}")
    assert focused_id(page) == "verdict-group"
    # One Tab from the group reaches the first verdict, not the header's links.
    page.keyboard.press("Tab")
    assert focused_id(page).startswith("verdict-")


def test_an_item_i_do_not_hold_opens_with_focus_on_its_heading(
    page: Page, live_server, alice, queue
):
    (item,) = make_items(queue, 1)
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{item.pk}/")
    assert focused_id(page) == "item-title"


def test_the_lease_is_announced_at_thresholds_not_every_second(
    page: Page, live_server, alice, queue
):
    make_items(queue, 1)
    browser_login(page, live_server, "alice")
    page.clock.install()
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    page.wait_for_url(ITEM_URL)
    item_id = int(ITEM_URL.match(page.url).group(1))
    ReviewItem.objects.filter(pk=item_id).update(lease_expires=Now() + timedelta(seconds=70))
    page.reload()
    announcer = page.locator("#console-announcer")
    expect(announcer).to_have_attribute("aria-live", "polite")
    page.clock.run_for(2_000)
    expect(announcer).to_have_text("")  # 1:08 left: nothing crossed yet, nothing said
    page.clock.run_for(10_000)
    expect(announcer).to_have_text("1 minute left on your lease of this item.")
    # The countdown itself is not a live region: it ticks silently.
    assert page.locator("#lease-countdown").get_attribute("aria-live") is None


def test_v_reveals_the_next_veiled_image_and_records_it(
    page: Page, live_server, alice, root, queue
):
    queue.sensitive = True
    queue.save()
    (item,) = make_items(queue, 1)
    for name, colour in (("a-front", "red"), ("b-back", "blue")):
        put_attachment(item_id=item.pk, actor=root, name=name, data=image_bytes(color=colour))
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{item.pk}/")
    expect(page.locator(".attachment-image-link.veiled")).to_have_count(2)
    page.keyboard.press("v")
    expect(page.locator(".attachment-image-link.veiled")).to_have_count(1)
    expect(page.locator("#console-announcer")).to_have_text("Image a-front revealed.")
    assert page.evaluate("document.activeElement.closest('.attachment').id").startswith(
        "attachment-"
    )
    events = ItemEvent.objects.filter(item=item, kind=ItemEventKind.ATTACHMENT_REVEALED)
    assert [e.detail["name"] for e in events] == ["a-front"]
    # The veiled image is blurred and grey by CSS, not merely marked.
    veiled = page.locator(".attachment-image-link.veiled img")
    assert "blur" in veiled.evaluate("el => getComputedStyle(el).filter")


def test_ops_updates_in_place_only_while_not_paused(page: Page, live_server, root, queue):
    browser_login(page, live_server, "root")
    page.goto(f"{live_server.url}/ops/")
    enrol_second_factor(page)  # staff prove a second factor before /ops/
    page.clock.install()
    page.goto(f"{live_server.url}/ops/")
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
    expect(page.get_by_role("link", name="Refresh now")).to_be_visible()
    auto = page.get_by_label("Update every minute")
    expect(auto).to_be_checked()
    as_loaded = page.locator(".ops-summary").inner_text()
    make_items(queue, 3)
    auto.uncheck()
    page.clock.run_for(61_000)
    page.wait_for_load_state("networkidle")
    assert page.locator(".ops-summary").inner_text() == as_loaded  # paused: nothing fetched
    auto.check()
    page.clock.run_for(61_000)
    expect(page.locator(".ops-summary")).not_to_have_text(as_loaded)
