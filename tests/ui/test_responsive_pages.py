"""The pages of the design system fit a phone, a laptop and a wide screen (issue 47).

At 390x844, 1366x768 and 1920x1080 each page is opened as its user meets it, then measured in
the browser: the document never scrolls sideways (a wide table scrolls inside its own
.rc-table-wrap instead), and no table or definition cell is squeezed into a column under 40 px
that wraps its text onto more than three lines (the "one character per line" columns).
The item and lane pages have their own checks (the decision within reach).
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from queue_app.services import claim_next, submit_decision
from tests.conftest import make_items, shown_hash
from tests.console.conftest import browser_login
from tests.identity.browser_steps import enrol_second_factor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = [(390, 844), (1366, 768), (1920, 1080)]

MEASURE = """() => {
  const doc = document.scrollingElement;
  const squeezed = [];
  for (const cell of document.querySelectorAll('td, th, dd')) {
    const box = cell.getBoundingClientRect();
    if (!box.width || !cell.innerText.trim() || box.width >= 40) continue;
    const range = document.createRange();
    range.selectNodeContents(cell);
    const lines = new Set([...range.getClientRects()].filter(r => r.width > 0)
                                                   .map(r => Math.round(r.top))).size;
    if (lines > 3) squeezed.push(`${cell.tagName} ${Math.round(box.width)}px, ${lines} lines: `
                                 + cell.innerText.trim().slice(0, 40));
  }
  // What sticks out, for the failure message: elements past the window's right edge whose
  // parent does not (the outermost culprits).
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
                     + [...el.classList].map(c => '.' + c).join('');
  const wide = el => el.getBoundingClientRect().right > window.innerWidth + 1;
  const outliers = [...document.body.querySelectorAll('*')]
    .filter(el => wide(el) && !(el.parentElement && wide(el.parentElement)))
    .slice(0, 8)
    .map(el => `${name(el)} (${Math.round(el.getBoundingClientRect().right)} px)`);
  return {scrollWidth: doc.scrollWidth, innerWidth: window.innerWidth, squeezed, outliers};
}"""


def assert_fits(page: Page, what: str) -> None:
    page.wait_for_load_state("load")
    m = page.evaluate(MEASURE)
    assert m["scrollWidth"] <= m["innerWidth"], (
        f"{what}: the page is {m['scrollWidth']} px wide in a {m['innerWidth']} px window; "
        f"sticking out: {m['outliers']}"
    )
    assert m["squeezed"] == [], f"{what}: cells squeezed into one-word columns: {m['squeezed']}"


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


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", password="pw-root")


@pytest.mark.parametrize("width,height", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_reviewer_pages_fit_the_window(page: Page, live_server, alice, queue, width, height):
    page.set_viewport_size({"width": width, "height": height})
    make_items(queue, 4)
    _decide_some(queue, alice, 2)
    claim_next(queue=queue, reviewer=alice)

    page.goto(f"{live_server.url}/accounts/login/")
    assert_fits(page, "the login page")

    browser_login(page, live_server, "alice")
    expect(page.locator("#my-queues")).to_be_visible()
    assert_fits(page, "home (My queues)")

    page.goto(f"{live_server.url}/my-work/?subject=item")
    expect(page.locator(".my-counts")).to_be_visible()
    expect(page.locator(".my-results")).to_be_visible()
    assert_fits(page, "My work with search results")

    page.goto(f"{live_server.url}/items/999999/")
    expect(page.locator(".errornote")).to_be_visible()
    assert_fits(page, "the refusal page")

    response = page.goto(f"{live_server.url}/ops/")
    assert response is not None and response.status == 403
    expect(page.locator("h1")).to_have_text("Not allowed")
    assert_fits(page, "the 403 page")


@pytest.mark.parametrize("width,height", VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_staff_pages_fit_the_window(page: Page, live_server, root, alice, queue, width, height):
    page.set_viewport_size({"width": width, "height": height})
    make_items(queue, 3)
    _decide_some(queue, alice, 1)

    browser_login(page, live_server, "root")
    page.goto(f"{live_server.url}/ops/")
    expect(page.locator("#mfa-secret")).to_be_visible()
    assert_fits(page, "the second-factor enrolment page")
    enrol_second_factor(page)

    page.goto(f"{live_server.url}/ops/")
    expect(page.locator(".ops-summary")).to_be_visible()
    assert_fits(page, "/ops/")

    page.goto(f"{live_server.url}/admin/")
    expect(page.locator("#site-name")).to_be_visible()
    assert_fits(page, "the admin index")

    page.goto(f"{live_server.url}/admin/queue_app/queue/{queue.pk}/change/")
    expect(page.locator("h1")).to_contain_text(re.compile("queue", re.I))
    assert_fits(page, "the admin queue page")
