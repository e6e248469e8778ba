"""Every console page, in every state a reviewer or operator meets it, checked by axe-core.

WCAG 2.1 A and AA, zero violations (tests/accessibility.py). Each test puts the page in one
state (a lease held, someone else's item, a refusal, an empty queue, the shortcuts dialog open,
a sensitive image veiled...) the way a person gets there, then asks axe.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from queue_app.services import claim_next, put_attachment
from tests.accessibility import assert_accessible
from tests.attachments.conftest import PDF_BYTES, image_bytes
from tests.conftest import make_items
from tests.console.conftest import browser_login
from tests.identity.browser_steps import enrol_second_factor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ITEM_URL = re.compile(r".*/items/(\d+)/$")


def test_the_login_page(page: Page, live_server):
    page.goto(f"{live_server.url}/accounts/login/")
    assert_accessible(page, "the login page")
    page.get_by_label("Username").fill("nobody")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".errornote")).to_be_visible()
    assert_accessible(page, "the login page after a wrong password")


def test_home_with_work_and_with_a_lease(page: Page, live_server, alice, queue):
    make_items(queue, 3)
    browser_login(page, live_server, "alice")
    assert_accessible(page, "My queues with work waiting")
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    page.wait_for_url(ITEM_URL)
    page.goto(f"{live_server.url}/")
    assert_accessible(page, "My queues with a lease held")


def test_home_with_an_empty_queue_and_after_next_found_nothing(
    page: Page, live_server, alice, bob, queue
):
    browser_login(page, live_server, "alice")
    expect(page.get_by_role("button", name="Nothing waiting").first).to_be_disabled()
    assert_accessible(page, "My queues with nothing waiting")
    make_items(queue, 1)
    page.reload()
    # Bob takes the last item between alice's page load and her press of Next.
    claim_next(queue=queue, reviewer=bob)
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    expect(page.locator(".messagelist")).to_contain_text("nothing waiting")
    assert_accessible(page, "My queues after Next found nothing")


def test_an_item_with_a_lease_and_the_shortcuts_dialog(page: Page, live_server, alice, queue):
    make_items(queue, 2)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    page.wait_for_url(ITEM_URL)
    assert_accessible(page, "an item with my lease")
    page.keyboard.press("a")
    assert_accessible(page, "an item with a verdict chosen")
    page.keyboard.press("Escape")
    page.locator("body").press("?")
    expect(page.locator("#shortcut-help")).to_be_visible()
    assert_accessible(page, "the keyboard shortcuts dialog")


def test_items_without_a_lease(page: Page, live_server, alice, bob, queue):
    held, pending = make_items(queue, 2)
    claim_next(queue=queue, reviewer=bob)
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{held.pk}/")
    expect(page.locator(".lease-status")).to_contain_text("is reviewing this item")
    assert_accessible(page, "an item someone else holds")
    page.goto(f"{live_server.url}/items/{pending.pk}/")
    assert_accessible(page, "a pending item not leased to me")


def test_refused_pages(page: Page, live_server, alice, queue):
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/999999/")
    expect(page.locator("h1")).to_be_visible()
    assert_accessible(page, "the no-such-item refusal")
    page.goto(f"{live_server.url}/items/1/decide/")
    assert_accessible(page, "the POST-only refusal")


def test_an_item_with_veiled_images_and_a_pdf(page: Page, live_server, alice, root, queue):
    queue.sensitive = True
    queue.save()
    (item,) = make_items(queue, 1)
    put_attachment(item_id=item.pk, actor=root, name="id-front", data=image_bytes("PNG"))
    put_attachment(item_id=item.pk, actor=root, name="selfie", data=image_bytes("JPEG"))
    put_attachment(item_id=item.pk, actor=root, name="statement.pdf", data=PDF_BYTES)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    page.wait_for_url(ITEM_URL)
    assert_accessible(page, "an item with veiled images")
    page.get_by_role("button", name="Reveal image id-front").click()
    expect(page.locator(".reveal-form")).to_have_count(1)
    assert_accessible(page, "an item with one image revealed")


def staff_second_factor(page: Page, url: str) -> None:
    """Open a staff page as a staff member without a device: enrol (checked too), then open it."""
    page.goto(url)
    assert_accessible(page, "the second-factor enrolment page")
    enrol_second_factor(page)
    page.goto(url)


def test_ops_dashboard(page: Page, live_server, root, queue):
    make_items(queue, 2)
    browser_login(page, live_server, "root")
    staff_second_factor(page, f"{live_server.url}/ops/")
    assert_accessible(page, "/ops/")


def test_the_admin_pages_we_customise(page: Page, live_server, root, bob, queue):
    from queue_app.models import ApiClient
    from tests.conftest import shown_hash

    (item,) = make_items(queue, 1)
    claimed = claim_next(queue=queue, reviewer=bob)
    from queue_app.services import submit_decision

    decision = submit_decision(
        item_id=item.pk,
        reviewer=bob,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(claimed),
    )
    browser_login(page, live_server, "root")
    staff_second_factor(page, f"{live_server.url}/admin/queue_app/reviewitem/{item.pk}/change/")
    expect(page.locator("ol.timeline")).to_be_visible()
    assert_accessible(page, "the admin item timeline")
    page.goto(f"{live_server.url}/admin/queue_app/decision/{decision.pk}/overturn/")
    expect(page.locator("h1")).to_contain_text("verturn")
    assert_accessible(page, "the overturn page")
    page.goto(f"{live_server.url}/admin/queue_app/apiclient/add/")
    page.get_by_label("Name").fill("upstream-kyc")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#api-token")).to_be_visible()
    assert ApiClient.objects.filter(name="upstream-kyc").exists()
    assert_accessible(page, "the API client token page")


def test_my_work_with_figures_a_search_and_a_refused_search(page: Page, live_server, alice, queue):
    from queue_app.services import submit_decision
    from tests.conftest import shown_hash

    make_items(queue, 3)
    for _ in range(2):
        item = claim_next(queue=queue, reviewer=alice)
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=item.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(item),
        )
    claim_next(queue=queue, reviewer=alice)
    browser_login(page, live_server, "alice")
    page.get_by_role("link", name="My work").click()
    expect(page.locator(".my-counts")).to_contain_text("Approve")
    assert_accessible(page, "My work")
    page.get_by_label("Subject words").fill("item")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(".my-results")).to_be_visible()
    assert_accessible(page, "My work with search results")
    page.goto(f"{live_server.url}/my-work/?item=-1")
    expect(page.locator(".errorlist")).to_be_visible()
    assert_accessible(page, "My work with a refused search")


def test_my_work_with_a_hold_and_qa_agreement(page: Page, live_server, alice, bob, queue):
    from datetime import timedelta

    from django.utils import timezone

    from queue_app.services import claim_lane_task, hold_item, record_qa_review, submit_decision
    from tests.clocks.helpers import add_hold_reasons
    from tests.conftest import shown_hash

    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    add_hold_reasons(queue)
    make_items(queue, 3)
    for _ in range(2):
        item = claim_next(queue=queue, reviewer=alice)
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=item.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(item),
        )
    for verdict, reason in [("approve", "verified"), ("reject", "fraud")]:
        task = claim_lane_task(queue=queue, kind="qa", user=bob)
        record_qa_review(
            task_id=task.pk,
            user=bob,
            lease_token=task.lease_token,
            verdict=verdict,
            reason_code=reason,
        )
    held = claim_next(queue=queue, reviewer=alice)
    hold_item(
        item_id=held.pk,
        reviewer=alice,
        lease_token=held.lease_token,
        reason_code="awaiting_documents",
        hold_until=timezone.now() + timedelta(hours=2),
    )
    browser_login(page, live_server, "alice")
    page.get_by_role("link", name="My work").click()
    expect(page.locator(".my-holds")).to_contain_text("Awaiting documents")
    expect(page.locator(".my-agreement")).to_contain_text("50%")
    assert_accessible(page, "My work with a hold and QA agreement")


@pytest.mark.parametrize(
    "media",
    [{"color_scheme": "dark"}, {"contrast": "more"}, {"reduced_motion": "reduce"}],
    ids=["dark", "more-contrast", "reduced-motion"],
)
def test_an_item_in_each_theme_the_reviewer_may_choose(
    page: Page, live_server, alice, queue, media
):
    make_items(queue, 1)
    page.emulate_media(**media)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name=re.compile("Next item in Kyc")).click()
    page.wait_for_url(ITEM_URL)
    assert_accessible(page, f"an item with my lease ({media})")
    if media.get("reduced_motion"):
        # a11y.css cuts every transition to 0.01 ms for people who asked for less motion.
        duration = page.evaluate(
            "getComputedStyle(document.querySelector('.verdict-button')).transitionDuration"
        )
        assert duration == "1e-05s"
    # The theme toggle in the header stays, and works from the keyboard.
    toggle = page.locator("button.theme-toggle").first
    expect(toggle).to_be_visible()
    before = page.evaluate("document.documentElement.dataset.theme || 'auto'")
    toggle.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.documentElement.dataset.theme") != before
    assert_accessible(page, f"an item after switching theme ({media})")
