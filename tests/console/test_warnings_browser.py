"""In a real browser: with evidence warnings shown, 'a' then Enter records nothing."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from queue_app.models import Decision, EvidenceRule, ReasonCode
from queue_app.services import create_item
from tests.console.conftest import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_takes_more_than_two_keys_to_approve_over_red_flags(
    page: Page, live_server, alice, queue
):
    ReasonCode.objects.filter(queue=queue, code="verified").update(is_default=True)
    EvidenceRule.objects.create(
        queue=queue, path="liveness", test="below", value="0.5", message="Liveness below 0.5"
    )
    EvidenceRule.objects.create(
        queue=queue, path="pep", test="in_list", value="hit", message="PEP hit"
    )
    create_item(
        queue=queue,
        subject="KYC",
        payload={"liveness": Decimal("0.48"), "pep": "hit"},
        idempotency_key="red",
    )
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(re.compile(r".*/items/\d+/$"))
    item_url = page.url

    page.keyboard.press("a")
    expect(page.locator("#verdict-approve")).to_be_checked()
    # The safe default is not filled in while the rules warn.
    expect(page.get_by_label("Reason")).to_have_value("")
    page.keyboard.press("Enter")
    expect(page.locator("#reason-missing")).to_be_visible()
    # A reason chosen, the tick is still wanted: the browser stops the post.
    page.get_by_label("Reason").select_option("verified")
    page.get_by_role("button", name="Submit decision").click()
    assert page.url == item_url
    assert not Decision.objects.exists()
    page.get_by_label("I have read the 2 warnings on this evidence").check()
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(f"{live_server.url}/")
    assert Decision.objects.get().reason_code.code == "verified"
