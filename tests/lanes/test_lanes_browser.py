"""Second-person lanes in a real browser: a maker decides, a checker confirms, the effect runs;
a blind QA review disagrees and an adjudicator overturns.

SCREENSHOTS=docs also writes docs/agreement-panel.png (1366 px), the picture the reviewer guide
shows; the check page's pictures come from `make screenshots` (bin/screenshots).
"""

from __future__ import annotations

import os
import re
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, expect

from queue_app.apply import apply_batch
from queue_app.models import AppliedDecision, CheckPolicy, Decision, LaneTask, ReviewItem
from queue_app.services import claim_lane_task, record_qa_review, standing_outcome
from tests.console.conftest import browser_login, recon_item, recon_queue  # noqa: F401
from tests.identity.browser_steps import enrol_second_factor
from tests.lanes.conftest import decide_one

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(__file__).resolve().parents[2] / "docs"
LANE_URL = re.compile(r".*/lanes/(\d+)/$")
ITEM_URL = re.compile(r".*/items/(\d+)/$")


def _docs_shot(target, name: str) -> None:
    if os.environ.get("SCREENSHOTS") == "docs":
        target.screenshot(path=str(DOCS / f"{name}.png"))


def _new_page(browser, live_server, username: str) -> Page:
    context = browser.new_context(viewport={"width": 1366, "height": 860})
    page = context.new_page()
    browser_login(page, live_server, username)
    return page


def test_maker_decides_checker_confirms_and_the_effect_is_applied(
    browser,
    live_server,
    alice,
    carol,
    recon_queue,  # noqa: F811
):
    CheckPolicy.objects.create(
        queue=recon_queue, verdict="approve", path="variance_amount", threshold=Decimal("1000")
    )
    item = recon_item(
        recon_queue,
        key="wo-7",
        variance_amount=Decimal("1500.00"),
        ledger_amount=Decimal("98500.00"),
        bank_amount=Decimal("100000.00"),
        match_decision="UNMATCHED",
    )
    maker = _new_page(browser, live_server, "alice")
    maker.get_by_role("button", name="Next item in Reconciliation").click()
    maker.wait_for_url(ITEM_URL)
    maker.locator("label[for=verdict-approve]").click()
    maker.get_by_label("Reason").select_option("within_tolerance")
    maker.get_by_label("Note").fill("Write-off agreed with treasury; FX rounding on the split.")
    maker.get_by_role("button", name="Submit decision").click()
    maker.wait_for_url(f"{live_server.url}/")
    assert ReviewItem.objects.get(pk=item.pk).state == "awaiting_check"
    decision = Decision.objects.get(item=item)
    assert not AppliedDecision.objects.filter(decision=decision).exists()
    # The maker's home offers no check of their own decision to them... it is someone else's.
    assert apply_batch() == 0

    checker = _new_page(browser, live_server, "carol")
    expect(checker.locator("#my-lanes")).to_contain_text("Checks")
    checker.get_by_role("button", name="Next check in Reconciliation").click()
    checker.wait_for_url(LANE_URL)
    expect(checker.locator("#maker-decision")).to_contain_text("Approve")
    expect(checker.locator("#maker-decision")).to_contain_text("alice")
    expect(checker.locator("#maker-decision")).to_contain_text("Write-off agreed with treasury")
    checker.keyboard.press("c")  # Confirm
    checker.wait_for_url(f"{live_server.url}/")
    expect(checker.locator(".messagelist")).to_contain_text(f"Confirmed decision #{decision.pk}")

    assert apply_batch() == 1
    assert AppliedDecision.objects.get(decision=decision).status == "applied"
    assert standing_outcome(item=item) == "approve"


def test_a_qa_round_with_a_disagreement_ends_in_an_overturn(
    browser, live_server, queue, alice, bob, carol, adjudicator
):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    # History for the agreement panel: bob's decisions, QA-reviewed by carol, who agrees.
    for verdict, reason in [("approve", "verified"), ("reject", "fraud"), ("approve", "verified")]:
        decide_one(queue, bob, verdict=verdict, reason=reason)
        task = claim_lane_task(queue=queue, kind="qa", user=carol)
        record_qa_review(
            task_id=task.pk,
            user=carol,
            lease_token=task.lease_token,
            verdict=verdict,
            reason_code=reason,
        )
    sampled = decide_one(queue, alice, note="Passport verified against the registry")
    qa = _new_page(browser, live_server, "carol")
    qa.get_by_role("button", name="Next QA in Kyc").click()
    qa.wait_for_url(LANE_URL)
    task_id = int(LANE_URL.match(qa.url).group(1))
    assert LaneTask.objects.get(pk=task_id).decision_id == sampled.pk
    # Blind: neither the first verdict nor its note nor its reviewer is on the page.
    expect(qa.locator("body")).not_to_contain_text("Passport verified against the registry")
    expect(qa.locator("#maker-decision")).to_have_count(0)
    qa.keyboard.press("r")  # reject
    qa.get_by_label("Reason").select_option("fraud")
    qa.get_by_role("button", name="Submit QA review").click()
    qa.wait_for_url(re.compile(r".*/$"))

    judge = _new_page(browser, live_server, "dana")
    enrol_second_factor(judge)  # an adjudication can overturn: a staff power
    judge.get_by_role("button", name="Next adjudication in Kyc").click()
    judge.wait_for_url(LANE_URL)
    expect(judge.locator("#maker-decision")).to_contain_text("alice")
    expect(judge.locator("#qa-decision")).to_contain_text("Reject")
    judge.keyboard.press("o")  # overturn
    judge.get_by_label("Overturn reason").select_option("reviewer_error")
    judge.get_by_role("button", name="Record adjudication").click()
    judge.wait_for_url(re.compile(r".*/$"))
    assert standing_outcome(item=sampled.item_id) == "reject"

    root = User.objects.create_superuser("root", password="pw-root")
    ops = _new_page(browser, live_server, root.username)
    ops.goto(f"{live_server.url}/ops/")
    enrol_second_factor(ops)  # staff pages ask a staff member without a device to enrol first
    ops.goto(f"{live_server.url}/ops/")
    panel = ops.locator("#lanes")
    expect(panel.locator("#agreement-panel")).to_contain_text("Kyc")
    # approve/approve 2, reject/reject 1, approve/reject 1: p_o = .75, p_e = .5, kappa = .5.
    expect(panel.locator("#agreement-panel .kappa")).to_have_text("0.50")
    _docs_shot(panel, "agreement-panel")


def test_a_check_page_keeps_its_lease_and_stops_once_someone_else_holds_it(
    browser, live_server, checked_queue, alice, bob, carol
):
    decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    # Lapsed while carol read the evidence, and nobody took it: opening the page renews it.
    LaneTask.objects.filter(pk=task.pk).update(lease_expires=timezone.now() - timedelta(seconds=60))
    page = _new_page(browser, live_server, "carol")
    page.goto(f"{live_server.url}/lanes/{task.pk}/")
    expect(page.locator("#lease-status")).to_contain_text("renewed automatically")
    expect(page.locator("#lease-countdown")).to_have_text(re.compile(r"^[45]:\d\d$"))
    task.refresh_from_db()
    assert task.lease_owner_id == carol.pk and task.lease_expires > timezone.now()

    # bob has it now (as after a lapse someone else claimed): the next beat stops the page.
    LaneTask.objects.filter(pk=task.pk).update(lease_owner=bob, lease_token=uuid.uuid4())
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(page.locator("#stale-banner")).to_contain_text("no longer leased to you")
    expect(page.locator("#lease-status")).to_have_text("This task is no longer yours.")
    for form in ("#confirm-form", "#return-form", "#release-form"):
        expect(page.locator(f"{form} button").first).to_be_disabled()
    page.context.close()
