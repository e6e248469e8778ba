"""No text under 12 px on a phone (issue 47: Lighthouse's legibility audit found 48% of home's text
below it, most of it inherited from Django admin's base.css).

At 390x844 each page is opened as its user meets it and every visible text node's computed
font-size is read in the browser; the failure message names the offenders (element, size, text).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from queue_app.services import claim_next, submit_decision
from tests.conftest import make_items, shown_hash
from tests.console.conftest import browser_login
from tests.identity.browser_steps import enrol_second_factor
from tests.ui.conftest import open_case_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
MIN_PX = 12

SMALL_TEXT = """(min) => {
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
                     + [...el.classList].map(c => '.' + c).join('');
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const small = new Map();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el || ['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE'].includes(el.tagName)) continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (size >= min) continue;
    const key = `${name(el)} ${size}px`;
    if (!small.has(key)) small.set(key, text.slice(0, 30));
  }
  return [...small].map(([k, t]) => `${k}: "${t}"`);
}"""


def _decide_some(queue, reviewer: User, n: int) -> None:
    for _ in range(n):
        item = claim_next(queue=queue, reviewer=reviewer)
        submit_decision(
            item_id=item.pk,
            reviewer=reviewer,
            lease_token=item.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(item),
        )


def assert_legible(page: Page, what: str) -> None:
    page.wait_for_load_state("load")
    small = page.evaluate(SMALL_TEXT, MIN_PX)
    assert small == [], f"{what}: text under {MIN_PX} px at 390 px wide: {small}"


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", password="pw-root")


def test_the_reviewer_pages_have_no_text_under_12_px_on_a_phone(
    page: Page, live_server, queue, checked_queue, case_users
):
    page.set_viewport_size(PHONE)
    make_items(queue, 2)
    _decide_some(queue, case_users["alice"], 2)  # My work has counts and search results
    url = open_case_page(
        "item", page, live_server, queue=queue, checked=checked_queue, users=case_users
    )
    page.goto(url)
    assert_legible(page, "the item page")

    page.goto(f"{live_server.url}/")
    expect(page.locator("#my-queues")).to_be_visible()
    assert_legible(page, "home (My queues)")

    page.goto(f"{live_server.url}/my-work/?subject=item")
    expect(page.locator(".my-counts")).to_be_visible()
    expect(page.locator(".my-results")).to_be_visible()
    assert_legible(page, "My work")


def test_a_lane_page_has_no_text_under_12_px_on_a_phone(
    page: Page, live_server, queue, checked_queue, case_users
):
    page.set_viewport_size(PHONE)
    url = open_case_page(
        "check", page, live_server, queue=queue, checked=checked_queue, users=case_users
    )
    page.goto(url)
    expect(page.locator("#confirm-button")).to_be_visible()
    assert_legible(page, "the check lane page")


def test_ops_has_no_text_under_12_px_on_a_phone(page: Page, live_server, root, alice, queue):
    page.set_viewport_size(PHONE)
    make_items(queue, 3)
    _decide_some(queue, alice, 1)
    browser_login(page, live_server, "root")
    page.goto(f"{live_server.url}/ops/")
    enrol_second_factor(page)
    page.goto(f"{live_server.url}/ops/")
    expect(page.locator(".ops-summary")).to_be_visible()
    assert_legible(page, "/ops/")
