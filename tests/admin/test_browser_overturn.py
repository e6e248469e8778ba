"""A compliance admin, in a real browser, finds an item, reads its history and overturns it."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from queue_app.models import AppliedDecision, Decision, Queue, ReasonCode
from queue_app.services import claim_next, create_item, release_lease
from tests.admin.conftest import decide, run_apply_worker_once
from tests.conftest import ARTIFACTS, screenshot
from tests.identity.browser_steps import enrol_second_factor

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _screenshot_down_to(page: Page, element, name: str) -> None:
    """Save the page from its top down to the end of the element (in test-artifacts/)."""
    box = element.bounding_box()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(
        path=str(ARTIFACTS / f"{name}.png"),
        full_page=True,
        clip={"x": 0, "y": 0, "width": 1280, "height": box["y"] + box["height"] + 12},
    )


@pytest.fixture
def story(queue, alice, bob) -> Decision:
    """Bob opens the item and gives it back; Alice approves it; the real worker applies that."""
    Queue.objects.filter(pk=queue.pk).update(name="KYC checks")  # as seed_demo names it
    for code, label in [("verified", "Identity verified"), ("reviewer_error", "Reviewer error")]:
        ReasonCode.objects.filter(queue=queue, code=code).update(label=label)
    for n, name in enumerate(["Jonas Lindqvist", "Mei Chen"]):
        create_item(
            queue=queue,
            subject=f"KYC check — {name}",
            payload={"applicant": {"name": name}, "liveness_score": Decimal("0.91")},
            idempotency_key=f"onboarding-{n}",
        )
    item, _ = create_item(
        queue=queue,
        subject="KYC check — Amara Okafor",
        payload={
            "applicant": {"name": "Amara Okafor", "nationality": "NG"},
            "document": {"type": "passport", "number": "P48213377", "expires": "2026-10-31"},
            "provider": {"name": "VerifyCo", "liveness_score": Decimal("0.97")},
            "watchlist_hits": [],
        },
        idempotency_key="onboarding-amara",
        priority=10,
    )
    lease = claim_next(queue=queue, reviewer=bob)
    release_lease(item_id=item.pk, reviewer=bob, lease_token=lease.lease_token)
    approved = decide(item, alice)
    run_apply_worker_once()
    assert AppliedDecision.objects.filter(decision=approved).exists()
    return approved


def test_a_supervisor_overturns_a_decision_from_the_item_history(
    story, compliance, live_server, page: Page
):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "casey")
    page.fill("#id_password", "pw-casey")
    page.click("input[type=submit]")
    enrol_second_factor(page)  # staff prove a second factor before the admin

    page.get_by_role("link", name="Review items").click()
    page.fill("#searchbar", "Amara")
    page.keyboard.press("Enter")
    page.get_by_role("link", name="KYC check — Amara Okafor").click()

    history = page.locator("#history")
    expect(history).to_contain_text("Standing outcome: approve")
    expect(history).to_contain_text("Released")
    expect(history).to_contain_text(f"Decision #{story.pk} applied")

    page.get_by_role("link", name=f"Decision #{story.pk}: approve").click()
    page.get_by_role("link", name="Overturn this decision").click()
    page.get_by_label("Reject").check()
    page.select_option("#id_reason_code", label="Reviewer error (reviewer_error)")
    page.fill("#id_note", "Passport expired on 2026-10-31, before the review date.")
    screenshot(page, "admin-overturn")
    page.get_by_role("button", name="Record overturn").click()

    expect(page.locator(".messagelist")).to_contain_text("reject now stands")
    overturn = Decision.objects.get(supersedes=story)
    expect(history).to_contain_text("Standing outcome: reject")
    expect(history).to_contain_text(f"Overturn #{overturn.pk} of decision #{story.pk}: now reject")
    expect(history).to_contain_text(f"Decision #{overturn.pk} waiting for the apply worker")

    # The operator's worker picks the overturn up like any decision.
    run_apply_worker_once()
    page.reload()
    expect(history).to_contain_text(f"Decision #{overturn.pk} applied")
    screenshot(page, "admin-item-page")
    _screenshot_down_to(page, history, "admin-timeline")

    # The overturned decision now says so, and offers no second overturn.
    page.get_by_role("link", name=f"Decision #{story.pk}: approve").click()
    expect(page.locator("body")).to_contain_text(f"Decision #{overturn.pk}: overturn")
    expect(page.get_by_role("link", name="Overturn this decision")).to_have_count(0)
