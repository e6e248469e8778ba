"""The document viewer in a real browser: zoom, rotate, previous and next by key and button, a
PDF's pages as pictures from the server, the veil kept until revealed, my preferences applied,
and axe clean with the viewer open."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from queue_app.models import ItemEvent, ItemEventKind
from queue_app.services import claim_next
from tests.accessibility import assert_accessible
from tests.attachments.conftest import image_bytes, pdf_bytes, put_file
from tests.conftest import make_items
from tests.console.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def dataset(page: Page, name: str) -> str:
    return page.locator("#attachment-viewer").get_attribute(f"data-{name}")


def test_the_viewer_zooms_rotates_and_walks_the_items_documents_by_key(
    page: Page, live_server, alice, upstream, queue
):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)  # alice holds it: r would choose reject
    put_file(upstream, item.pk, "a-photo", image_bytes(size=(120, 60)))
    put_file(upstream, item.pk, "b-statement.pdf", pdf_bytes(2), "application/pdf")
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{item.pk}/")
    opener = page.get_by_role("button", name="View a-photo")
    opener.click()
    viewer = page.get_by_role("dialog", name="Document viewer")
    expect(viewer).to_be_visible()
    expect(page.locator("#viewer-position")).to_have_text("1 of 2: a-photo (image)")
    assert page.evaluate("document.activeElement.id") == "viewer-stage"

    page.keyboard.press("+")
    assert dataset(page, "zoom") == "1.5"
    page.keyboard.press("-")
    page.keyboard.press("-")
    assert dataset(page, "zoom") == "0.75"
    page.keyboard.press("0")
    assert dataset(page, "zoom") == "1"
    expect(page.locator("#viewer-zoom")).to_have_text("Fit")
    frame = page.locator(".viewer-page").first
    wide = frame.bounding_box()
    assert wide["width"] > wide["height"]
    page.keyboard.press("r")
    assert dataset(page, "rotation") == "90"
    tall = frame.bounding_box()
    assert tall["width"] < tall["height"]  # a quarter turn: the box turned with the picture
    # In the viewer r rotates; it never chose a verdict behind it.
    assert page.locator("input[name=verdict]:checked").count() == 0
    viewer.get_by_role("button", name="Zoom in").click()
    assert dataset(page, "zoom") == "1.5"

    page.keyboard.press("]")
    expect(page.locator("#viewer-position")).to_have_text("2 of 2: b-statement.pdf (PDF, 2 pages)")
    assert dataset(page, "zoom") == "1" and dataset(page, "rotation") == "0"
    pages = page.locator("#viewer-stage img")
    expect(pages).to_have_count(2)
    for n in (1, 2):
        picture = pages.nth(n - 1)
        expect(picture).to_have_attribute(
            "src", re.compile(rf"/items/{item.pk}/attachments/\w{{64}}/pages/{n}/\?scale=2$")
        )
        expect(picture).to_have_attribute("alt", f"b-statement.pdf, page {n} of 2")
    pages.first.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('#viewer-stage img').naturalWidth === 400")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#viewer-position")).to_have_text("1 of 2: a-photo (image)")
    viewer.get_by_role("button", name="Next document").click()
    page.keyboard.press("[")
    expect(page.locator("#viewer-position")).to_contain_text("1 of 2")

    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()
    expect(opener).to_be_focused()


def test_a_veiled_image_stays_veiled_in_the_viewer_until_revealed(
    page: Page, live_server, alice, upstream, queue
):
    queue.sensitive = True
    queue.save()
    (item,) = make_items(queue, 1)
    put_file(upstream, item.pk, "upload", image_bytes(color="red"))
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{item.pk}/")
    page.get_by_role("button", name="View upload").click()
    stage = page.locator("#viewer-stage")
    expect(stage).to_have_class(re.compile(r"\bveiled\b"))
    shown = page.locator("#viewer-stage img")
    expect(shown).to_have_attribute("alt", "upload (blurred until revealed)")
    assert "blur(18px)" in shown.evaluate("el => getComputedStyle(el).filter")
    assert not ItemEvent.objects.filter(kind=ItemEventKind.ATTACHMENT_REVEALED).exists()

    page.keyboard.press("v")
    expect(stage).not_to_have_class(re.compile(r"\bveiled\b"))
    expect(shown).to_have_attribute("alt", "upload")
    expect(page.locator("#console-announcer")).to_have_text("Image upload revealed.")
    expect(page.get_by_role("button", name="Reveal this image")).to_be_hidden()
    events = ItemEvent.objects.filter(item=item, kind=ItemEventKind.ATTACHMENT_REVEALED)
    assert [(e.actor_id, e.detail["name"]) for e in events] == [(alice.pk, "upload")]
    # Revealed, the queue's default greyscale stays on: colour is what it turned off.
    assert shown.evaluate("el => getComputedStyle(el).filter") == "grayscale(1)"
    page.keyboard.press("Escape")
    expect(page.locator(".attachment-image-link.veiled")).to_have_count(0)


def test_my_preferences_are_saved_in_the_browser_and_applied_to_the_images(
    page: Page, live_server, alice, upstream, queue
):
    queue.sensitive = True
    queue.save()
    (item,) = make_items(queue, 1)
    put_file(upstream, item.pk, "upload", image_bytes(color="red"))
    browser_login(page, live_server, "alice")
    page.get_by_role("link", name="Preferences").click()
    expect(page.get_by_role("heading", name="Viewing preferences")).to_be_visible()
    assert_accessible(page, "the preferences page")
    page.get_by_label("Blur of images until revealed").select_option("low")
    page.get_by_label("Images in greyscale").select_option("off")
    page.get_by_role("button", name="Save preferences").click()
    expect(page.locator(".messagelist")).to_contain_text("Your viewing preferences are saved.")
    expect(page.get_by_label("Blur of images until revealed")).to_have_value("low")

    page.goto(f"{live_server.url}/items/{item.pk}/")
    card = page.locator(".attachment-image-link.veiled img")
    assert card.evaluate("el => getComputedStyle(el).filter") == "blur(6px) grayscale(0)"
    page.get_by_role("button", name="View upload").click()
    shown = page.locator("#viewer-stage img")
    assert shown.evaluate("el => getComputedStyle(el).filter") == "blur(6px) grayscale(0)"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_open_viewer_passes_axe(page: Page, live_server, alice, upstream, queue, scheme):
    queue.sensitive = True
    queue.save()
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    put_file(upstream, item.pk, "upload", image_bytes())
    put_file(upstream, item.pk, "statement.pdf", pdf_bytes(1), "application/pdf")
    page.emulate_media(color_scheme=scheme)
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{item.pk}/")
    assert_accessible(page, f"the item page with a PDF's pages and a veiled image ({scheme})")
    page.get_by_role("button", name="View upload").click()
    expect(page.get_by_role("dialog", name="Document viewer")).to_be_visible()
    assert_accessible(page, f"the document viewer on a veiled image ({scheme})")
    page.keyboard.press("]")
    expect(page.locator("#viewer-position")).to_contain_text("statement.pdf")
    assert_accessible(page, f"the document viewer on a PDF's pages ({scheme})")


def test_the_viewer_fits_a_phone_and_keeps_close_in_reach(
    page: Page, live_server, alice, upstream, queue
):
    (item,) = make_items(queue, 1)
    put_file(upstream, item.pk, "statement.pdf", pdf_bytes(2), "application/pdf")
    page.set_viewport_size({"width": 390, "height": 844})
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{item.pk}/")
    page.get_by_role("button", name="View statement.pdf page by page").click()
    viewer = page.locator("#attachment-viewer")
    expect(viewer).to_be_visible()
    page.wait_for_function("() => document.querySelector('#viewer-stage img').naturalWidth > 0")
    # Fit: a page as wide as the stage, nothing sideways to scroll, every control on screen.
    assert viewer.evaluate("el => el.scrollWidth <= el.clientWidth")
    stage = page.locator("#viewer-stage")
    assert stage.evaluate("el => el.scrollWidth <= el.clientWidth")
    for name in ("Previous document", "Zoom in", "Rotate", "Close"):
        box = viewer.get_by_role("button", name=name).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, name
        assert box["y"] >= 0 and box["y"] + box["height"] <= 844, name
    page.keyboard.press("+")
    page.keyboard.press("+")
    assert stage.evaluate("el => el.scrollWidth > el.clientWidth")  # zoomed: it pans
