"""The escalated item's page: who escalated it, when, why, and links both ways."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from queue_app.apply import apply_batch
from queue_app.models import ReviewItem
from queue_app.services import claim_next, escalate_abandoned
from tests.conftest import backdate_lease, make_items, screenshot
from tests.console.conftest import browser_login, login
from tests.test_handoff import NOTE, _escalate

ITEM_URL = re.compile(r".*/items/(\d+)/$")


@pytest.mark.django_db
def test_the_escalation_page_names_who_why_and_links_back(queue, alice, bob):
    make_items(queue, 1)
    decision, opened = _escalate(queue, alice)
    claim_next(queue=opened.queue, reviewer=bob)
    page = login(bob).get(reverse("item", args=[opened.pk])).content.decode()
    assert "Escalated by alice</strong>" in page
    assert NOTE in page and "policy_gap" in page
    assert f'href="/items/{decision.item_id}/"' in page
    assert f"decision #{decision.pk}" in page
    assert "Not to be taken by alice" in page

    origin = login(bob).get(reverse("item", args=[decision.item_id])).content.decode()
    assert f'href="/items/{opened.pk}/"' in origin and "Escalated to" in origin


@pytest.mark.django_db
def test_the_excluded_reviewer_is_told_why_it_is_not_theirs(queue, alice):
    make_items(queue, 1)
    _, opened = _escalate(queue, alice)
    page = login(alice).get(reverse("item", args=[opened.pk])).content.decode()
    assert "Escalation is a hand-off" in page


@pytest.mark.django_db
def test_a_link_to_a_queue_the_viewer_cannot_open_is_plain_text(queue, alice, bob):
    make_items(queue, 1)
    decision, opened = _escalate(queue, alice)
    queue.reviewer_groups.clear()  # bob keeps the escalation queue, loses the original's
    page = login(bob).get(reverse("item", args=[opened.pk])).content.decode()
    assert f"item #{decision.item_id}" in page
    assert f'href="/items/{decision.item_id}/"' not in page


@pytest.mark.django_db
def test_a_moved_item_says_who_left_it(queue, alice, bob):
    item = make_items(queue, 1)[0]
    for _ in range(queue.escalation_threshold):
        backdate_lease(claim_next(queue=queue, reviewer=alice).pk)
    escalate_abandoned()
    page = login(bob).get(reverse("item", args=[item.pk])).content.decode()
    assert "Moved here from Kyc</strong>" in page
    assert "after 3 leases without a decision; held by alice" in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_escalating_in_the_browser_hands_the_item_to_a_colleague(
    browser, live_server, alice, bob, queue
):
    (origin,) = make_items(queue, 1)
    pages = {}
    for username in ("alice", "bob"):
        context = browser.new_context(viewport={"width": 1366, "height": 860})
        pages[username] = context.new_page()
        browser_login(pages[username], live_server, username)

    page: Page = pages["alice"]
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(f"{live_server.url}/items/{origin.pk}/")
    page.locator("label[for=verdict-escalate]").click()
    page.get_by_label("Reason").select_option("policy_gap")
    page.get_by_label("Note").fill(NOTE)
    page.get_by_role("button", name="Submit decision").click()
    expect(page.locator(".messagelist")).to_contain_text("Recorded escalate")
    while apply_batch(batch_size=10):  # the apply worker opens the escalation
        pass
    opened = ReviewItem.objects.get(escalated_from=origin)

    # Alice escalated it: nothing waits for her in the escalation queue, and a Next item
    # posted anyway (a stale page) passes it over.
    page.goto(f"{live_server.url}/")
    expect(page.locator("tr[data-queue=escalation] .action")).to_contain_text("Nothing waiting")
    login(alice).post(reverse("queue-next", args=["escalation"]))
    assert ReviewItem.objects.get(pk=opened.pk).lease_owner_id is None

    # Bob gets it, sees who escalated it, when, why, and follows the link back.
    page = pages["bob"]
    page.goto(f"{live_server.url}/")
    page.get_by_role("button", name="Next item in Escalation").click()
    page.wait_for_url(f"{live_server.url}/items/{opened.pk}/")
    handoff = page.locator("#handoff")
    expect(handoff).to_contain_text("Escalated by alice")
    expect(handoff.locator(".handoff-note")).to_have_text(NOTE)
    expect(handoff.locator(".handoff-reason")).to_have_text("policy_gap")
    expect(handoff).to_contain_text("Not to be taken by alice")
    screenshot(page, "console-handoff")
    handoff.get_by_role("link", name=f"item #{origin.pk}").click()
    page.wait_for_url(f"{live_server.url}/items/{origin.pk}/")
    expect(page.locator("#handoff")).to_contain_text(f"Escalated to item #{opened.pk}")
    page.locator("#handoff").get_by_role("link", name=f"item #{opened.pk}").click()
    page.wait_for_url(f"{live_server.url}/items/{opened.pk}/")
