"""The case pages from a phone to a wide screen: no sideways scroll, readable evidence values,
and the decision in reach (on screen at load, or one press of the bottom bar away)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.conftest import CASE_PAGES, DECISION_CONTROL, VIEWPORTS, open_case_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Each evidence value's column, the narrowest one: at 390 px the old page wrapped values one
# character per line.
NARROWEST_VALUE = """() => Math.min(
    ...[...document.querySelectorAll('.evidence-details .ev-row > dd')]
    .filter(dd => dd.offsetParent !== null).map(dd => dd.getBoundingClientRect().width))"""

# Whether the control is wholly inside the window and is what a press there would hit (the
# bottom bar does not cover it).
IN_REACH = """(el) => {
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth)
    return false;
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return hit !== null && (el === hit || el.contains(hit));
}"""


def _measure(page: Page, url: str, kind: str, size: str) -> None:
    page.set_viewport_size(VIEWPORTS[size])
    # A fresh load at the top (a reload would keep the scroll of the last jump).
    page.goto(url)
    where = f"the {kind} page at {size} ({VIEWPORTS[size]['width']} px)"
    overflow = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert overflow[0] <= overflow[1], f"{where} scrolls sideways: {overflow}"
    narrowest = page.evaluate(NARROWEST_VALUE)
    assert narrowest >= 80, f"{where}: an evidence value column is {narrowest} px wide"
    control = page.locator(DECISION_CONTROL[kind]).first
    if control.evaluate(IN_REACH):
        return
    # Not on screen at load: one press of the bottom bar brings it into reach.
    bar = page.locator(".rc-bottom-bar #jump-to-decision")
    expect(bar).to_be_visible()
    bar.click()
    page.wait_for_function(
        f"() => ({IN_REACH})(document.querySelector({DECISION_CONTROL[kind]!r}))"
    )
    assert control.evaluate(IN_REACH), f"{where}: the decision is out of reach"


@pytest.mark.parametrize("kind", CASE_PAGES)
def test_each_case_page_fits_every_window_and_keeps_the_decision_in_reach(
    kind, page: Page, live_server, queue, checked_queue, case_users
):
    url = open_case_page(
        kind, page, live_server, queue=queue, checked=checked_queue, users=case_users
    )
    for size in VIEWPORTS:
        _measure(page, url, kind, size)


def test_on_a_phone_the_item_page_needs_the_bottom_bar_and_it_works_in_one_press(
    page: Page, live_server, queue, checked_queue, case_users
):
    # The measure above would pass vacuously if the verdicts were on screen anyway: on a phone
    # they are below the evidence, and the bar is what brings them.
    open_case_page("item", page, live_server, queue=queue, checked=checked_queue, users=case_users)
    page.set_viewport_size(VIEWPORTS["phone"])
    page.reload()  # at the top: nothing was scrolled yet
    control = page.locator(DECISION_CONTROL["item"])
    assert not control.evaluate(IN_REACH)
    page.locator("#jump-to-decision").click()
    page.wait_for_function(
        f"() => ({IN_REACH})(document.querySelector({DECISION_CONTROL['item']!r}))"
    )
    # The keys still work from there.
    page.keyboard.press("a")
    expect(page.locator("#verdict-approve")).to_be_checked()
    # On a wide screen there is no bar: the decision is beside the evidence.
    page.set_viewport_size(VIEWPORTS["laptop"])
    expect(page.locator(".rc-bottom-bar")).to_be_hidden()


def test_documents_beside_the_evidence_leave_it_readable_and_stay_in_their_panel(
    page: Page, live_server, queue, checked_queue, case_users
):
    # At 1366 px documents beside the evidence left nested values a letter per line, and a
    # wide image ran out of its card; the bar's link was drawn blue on blue.
    from queue_app.services import put_attachment
    from tests.attachments.conftest import image_bytes

    url = open_case_page(
        "item", page, live_server, queue=queue, checked=checked_queue, users=case_users
    )
    item_id = int(url.rstrip("/").rsplit("/", 1)[1])
    put_attachment(
        item_id=item_id,
        actor=case_users["alice"],
        name="wide.png",
        data=image_bytes(size=(900, 500)),
    )
    for size in VIEWPORTS:
        _measure(page, url, "item", size)
        image = page.locator(".attachment-image").first
        panel = page.locator("section.documents").first
        inside = page.evaluate(
            "([i, p]) => i.getBoundingClientRect().right <= p.getBoundingClientRect().right + 0.5",
            [image.element_handle(), panel.element_handle()],
        )
        assert inside, f"the image runs out of its panel at {size}"
    page.set_viewport_size(VIEWPORTS["phone"])
    page.reload()
    colours = page.locator("#jump-to-decision").evaluate(
        "(a) => [getComputedStyle(a).color, getComputedStyle(a).backgroundColor]"
    )
    assert colours[0] != colours[1], colours
