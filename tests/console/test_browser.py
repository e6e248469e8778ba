"""The console in a real browser: Debian's Chromium driven by Playwright against live_server."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from playwright.sync_api import Page, expect

from queue_app.models import Decision, ItemEvent, ItemEventKind, Queue, ReviewItem
from queue_app.services import claim_next
from tests.conftest import backdate_lease, make_items, make_queue, screenshot
from tests.console.conftest import browser_login, recon_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ITEM_URL = re.compile(r".*/items/(\d+)/$")


def item_id_of(page: Page) -> int:
    match = ITEM_URL.match(page.url)
    assert match, f"not on an item page: {page.url}"
    return int(match.group(1))


def test_it_logs_in_decides_and_opens_the_next_item(
    page: Page, live_server, alice, queue, recon_queue
):
    make_items(queue, 4)
    first = recon_item(
        recon_queue,
        key="r1",
        bank_reference="BR448120",
        counterparty={"name": "Acme Corporation plc", "iban": "GB82 WEST 1234 5698 7654 32"},
        ledger_entries=[
            {"entry": "JE-20931", "amount": Decimal("1250000.00"), "posted": "2026-11-02"},
            {"entry": "JE-20944", "amount": Decimal("-1249999.90"), "posted": "2026-11-03"},
        ],
        analyst_note=(
            "Bank statement line was split across two ledger postings after the November FX "
            "revaluation; the residual looks like a rounding artefact but exceeds tolerance."
        ),
    )
    second = recon_item(
        recon_queue,
        key="r2",
        ledger_entity="GLOBEX-LTD",
        variance_amount=Decimal("-250.00"),
        match_decision="UNMATCHED",
    )
    Queue.objects.filter(pk=recon_queue.pk).update(
        name="Reconciliation exceptions",
        description="Bank statement lines that did not match the ledger.",
    )
    browser_login(page, live_server, "alice")
    expect(page.locator("#my-queues")).to_contain_text("Reconciliation exceptions")

    page.get_by_role("button", name="Next item in Reconciliation exceptions").click()
    page.wait_for_url(ITEM_URL)
    assert item_id_of(page) == first.pk

    # Home shows the lease with a way back to it.
    page.goto(f"{live_server.url}/")
    expect(page.locator(".lease-strip")).to_contain_text(f"Resume #{first.pk}")
    screenshot(page, "console-home")
    page.get_by_role("link", name=f"Resume #{first.pk} — ACME statement r1").click()
    page.wait_for_url(f"{live_server.url}/items/{first.pk}/")
    expect(page.locator(".recon-amount.emphasis")).to_contain_text("+12,345,678,901,234.57")
    screenshot(page, "console-item")

    page.locator("label[for=verdict-approve]").click()
    page.get_by_label("Reason").select_option("within_tolerance")
    page.get_by_label("Note").fill("Matches the bank's corrected statement.")
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(lambda url: url.endswith(f"/items/{second.pk}/"))
    expect(page.locator(".messagelist")).to_contain_text(
        f"Recorded approve (within_tolerance) on item #{first.pk}"
    )

    page.locator("label[for=verdict-reject]").click()
    page.get_by_label("Reason").select_option("fraud")
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(f"{live_server.url}/")
    expect(page.locator(".messagelist")).to_contain_text("There is nothing waiting in this queue")

    decisions = list(
        Decision.objects.order_by("id").values_list("item_id", "verdict", "reviewer__username")
    )
    assert decisions == [(first.pk, "approve", "alice"), (second.pk, "reject", "alice")]


def test_two_reviewers_pressing_next_together_never_get_the_same_item(
    browser, live_server, alice, bob, queue
):
    make_items(queue, 6)
    pages = []
    for username in ("alice", "bob"):
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        page = context.new_page()
        browser_login(page, live_server, username)
        pages.append(page)

    # Fire both submissions before waiting on either, so the two claims race on the server.
    for page in pages:
        page.evaluate(
            "document.querySelector('form[action$=\"/queues/kyc/next/\"]').requestSubmit()"
        )
    for page in pages:
        page.wait_for_url(ITEM_URL)
    held = [item_id_of(page) for page in pages]
    assert held[0] != held[1]
    owners = dict(ReviewItem.objects.filter(pk__in=held).values_list("pk", "lease_owner__username"))
    assert owners == {held[0]: "alice", held[1]: "bob"}

    # Both decide at once; each decision claims the next item on the server, racing again.
    for page in pages:
        page.locator("label[for=verdict-approve]").click()
        page.get_by_label("Reason").select_option("verified")
    for page in pages:
        page.evaluate("document.getElementById('decision-form').requestSubmit()")
    for page, old in zip(pages, held, strict=True):
        page.wait_for_url(
            lambda url, old=old: bool(ITEM_URL.match(url)) and not url.endswith(f"/{old}/")
        )
    nxt = [item_id_of(page) for page in pages]
    assert nxt[0] != nxt[1]
    assert not set(nxt) & set(held)
    owners = dict(ReviewItem.objects.filter(pk__in=nxt).values_list("pk", "lease_owner__username"))
    assert owners == {nxt[0]: "alice", nxt[1]: "bob"}

    decided = dict(Decision.objects.values_list("item_id", "reviewer__username"))
    assert decided == {held[0]: "alice", held[1]: "bob"}
    for page in pages:
        page.context.close()


def test_a_stale_tab_is_refused_and_nothing_is_written(page: Page, live_server, alice, bob, queue):
    (item,) = make_items(queue, 1)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(f"{live_server.url}/items/{item.pk}/")

    # Alice walks away; her lease runs out and Bob is given the item.
    backdate_lease(item.pk)
    assert claim_next(queue=queue, reviewer=bob).pk == item.pk

    page.locator("label[for=verdict-approve]").click()
    page.get_by_label("Reason").select_option("verified")
    page.get_by_role("button", name="Submit decision").click()
    expect(page.locator(".messagelist")).to_contain_text(
        "Bob took this item after your lease ran out."
    )
    expect(page.locator("#decision-form")).to_have_count(0)
    expect(page.locator(".lease-status")).to_contain_text("bob is reviewing this item")
    screenshot(page, "console-stale")

    assert Decision.objects.count() == 0
    item.refresh_from_db()
    assert item.state == "leased" and item.lease_owner_id == bob.pk


def test_the_heartbeat_tells_at_once_when_someone_else_took_the_item(
    page: Page, live_server, alice, bob, reviewers_group
):
    short = make_queue("short", group=reviewers_group, lease_ttl=timedelta(seconds=3))
    (item,) = make_items(short, 1)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Short").click()
    page.wait_for_url(f"{live_server.url}/items/{item.pk}/")

    # One transaction, so a heartbeat landing in between cannot revive Alice's lease first.
    with transaction.atomic():
        backdate_lease(item.pk)
        assert claim_next(queue=short, reviewer=bob).pk == item.pk

    expect(page.locator("#stale-banner")).to_have_text(
        "bob took this item after your lease ran out. Nothing from this page was recorded.",
        timeout=10_000,
    )
    expect(page.locator("#submit-decision")).to_be_disabled()
    expect(page.locator("#verdict-approve")).to_be_disabled()
    assert Decision.objects.count() == 0


def test_the_heartbeat_keeps_a_lease_alive_well_past_its_ttl(
    page: Page, live_server, alice, bob, reviewers_group
):
    short = make_queue("short", group=reviewers_group, lease_ttl=timedelta(seconds=3))
    (item,) = make_items(short, 1)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Short").click()
    page.wait_for_url(f"{live_server.url}/items/{item.pk}/")
    item.refresh_from_db()
    token = item.lease_token

    page.wait_for_timeout(8_000)  # more than twice the TTL, page open and visible

    # Nobody else can take it: the lease is live, and still the same lease.
    assert claim_next(queue=short, reviewer=bob) is None
    item.refresh_from_db()
    assert (item.state, item.lease_owner_id, item.lease_token, item.lease_count) == (
        "leased",
        alice.pk,
        token,
        1,
    )
    # Alive 8 s into a 3 s lease means it was renewed at least twice (8 // 3).
    renewals = ItemEvent.objects.filter(item=item, kind=ItemEventKind.RENEWED).count()
    assert renewals >= 2

    page.locator("label[for=verdict-approve]").click()
    page.get_by_label("Reason").select_option("verified")
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(f"{live_server.url}/")
    assert Decision.objects.get().item_id == item.pk


def test_a_decision_can_be_made_with_the_keyboard_only(page: Page, live_server, alice, queue):
    (item,) = make_items(queue, 1)
    browser_login(page, live_server, "alice")

    page.keyboard.press("?")
    expect(page.locator("#shortcut-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#shortcut-help")).to_be_hidden()

    page.keyboard.press("n")  # the first of my queues with work waiting: Kyc
    page.wait_for_url(f"{live_server.url}/items/{item.pk}/")

    page.keyboard.press("?")
    expect(page.locator("#shortcut-help")).to_be_visible()
    screenshot(page, "console-shortcuts")
    page.keyboard.press("?")
    expect(page.locator("#shortcut-help")).to_be_hidden()

    # Letters typed into the note are text, not shortcuts; Escape leaves the note.
    for _ in range(40):  # Tab through the page to the note, as a keyboard user does
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "id_note":
            break
    page.keyboard.type("are sure")
    expect(page.get_by_label("Note")).to_have_value("are sure")
    expect(page.locator("input[name=verdict]:checked")).to_have_count(0)
    page.keyboard.press("Escape")

    # Reject reasons differ in consequence: none is chosen for the reviewer.
    page.keyboard.press("r")
    expect(page.locator("#verdict-reject")).to_be_checked()
    expect(page.get_by_label("Reason")).to_have_value("")
    page.keyboard.press("ArrowDown")
    expect(page.get_by_label("Reason")).to_have_value("document_expired")
    page.keyboard.press("e")
    expect(page.get_by_label("Reason")).to_have_value("")
    page.keyboard.press("r")
    expect(page.get_by_label("Reason")).to_have_value("")
    page.keyboard.press("ArrowDown")
    expect(page.get_by_label("Reason")).to_have_value("document_expired")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/")

    decision = Decision.objects.select_related("reason_code").get()
    assert (decision.item_id, decision.verdict, decision.reason_code.code, decision.note) == (
        item.pk,
        "reject",
        "document_expired",
        "are sure",
    )


def test_the_console_works_without_javascript(browser, live_server, alice, queue):
    first, second = make_items(queue, 2)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(f"{live_server.url}/items/{first.pk}/")

    # Every reason is listed, grouped by verdict; the server checks the pairing.
    expect(page.locator("optgroup[data-verdict=reject] option")).to_have_count(2)
    page.locator("label[for=verdict-approve]").click()
    page.get_by_label("Reason").select_option("verified")
    page.get_by_role("button", name="Submit decision").click()
    page.wait_for_url(f"{live_server.url}/items/{second.pk}/")

    page.get_by_role("button", name="Release").click()
    page.wait_for_url(f"{live_server.url}/")
    expect(page.locator(".messagelist")).to_contain_text(f"Item #{second.pk} is back in Kyc.")
    second.refresh_from_db()
    assert second.state == "pending"
    assert Decision.objects.get().item_id == first.pk
    context.close()


def test_a_lapsed_lease_nobody_took_is_renewed_when_the_page_opens(
    page: Page, live_server, alice, queue
):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    backdate_lease(item.pk, seconds=60)
    browser_login(page, live_server, "alice")
    page.goto(f"{live_server.url}/items/{item.pk}/")

    expect(page.locator("#lease-status")).to_contain_text("Yours for")
    expect(page.locator("#lease-countdown")).to_have_text(re.compile(r"^[45]:\d\d$"))
    item.refresh_from_db()
    assert item.lease_owner_id == alice.pk
    assert ItemEvent.objects.filter(item=item, kind=ItemEventKind.RENEWED).exists()


def test_the_home_page_offers_nothing_to_press_on_an_empty_queue(
    page: Page, live_server, alice, queue
):
    (item,) = make_items(queue, 1)
    browser_login(page, live_server, "alice")

    empty = page.locator('tr[data-queue="escalation"]')
    expect(empty.locator(".next-button")).to_have_text("Nothing waiting")
    expect(empty.locator(".next-button")).to_be_disabled()
    expect(empty.locator(".oldest-waiting")).to_have_text("—")
    expect(page.locator('tr[data-queue="kyc"] .oldest-waiting')).to_have_text("under a minute")

    page.keyboard.press("n")  # goes to the queue with work, whatever the order
    page.wait_for_url(f"{live_server.url}/items/{item.pk}/")


def test_the_heartbeat_says_reload_when_the_session_ended_and_leaves_the_form_alone(
    page: Page, live_server, alice, queue
):
    from queue_app.models import ReviewSession as Session

    (item,) = make_items(queue, 1)
    browser_login(page, live_server, "alice")
    page.get_by_role("button", name="Next item in Kyc").click()
    page.wait_for_url(f"{live_server.url}/items/{item.pk}/")

    # Signed out elsewhere (an admin ended the session): the heartbeat's POST lands on the
    # login page, which is no answer about the lease, so it is not taken for one.
    Session.objects.all().delete()
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")

    expect(page.locator("#stale-banner")).to_contain_text("Reload the page", timeout=10_000)
    expect(page.locator("#submit-decision")).to_be_enabled()
    item.refresh_from_db()
    assert item.state == "leased" and item.lease_owner_id == alice.pk
