"""The whole loop a regulator asks for, end to end, with a real worker killed in the middle.

Intake through the API, a decision, its check, the statement of reasons built by the apply
worker, its notice at the platform and its batch accepted by the Transparency Database stand-in;
then the affected person's appeal through the API, decided by a second person in the browser
as a reversal; the worker is SIGKILLed while carrying the reversal out, and a new one finishes:
the overturn's effect, its statement and the appeal's outcome notice each happen exactly once.
"""

from __future__ import annotations

import json
import re
import signal

import pytest
from playwright.sync_api import Page, expect

from queue_app.models import (
    Appeal,
    AppealNotice,
    AppliedDecision,
    CheckPolicy,
    Decision,
    DeliveryChannel,
    LaneOutcome,
    StatementDelivery,
    StatementOfReasons,
)
from queue_app.services import claim_lane_task, claim_next, confirm_check, submit_decision
from tests.api.conftest import intake_body
from tests.conftest import shown_hash
from tests.console.conftest import browser_login
from tests.identity.browser_steps import enrol_second_factor
from tests.worker.conftest import spawn_worker, worker_env  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FAST = ("--poll-interval", "0.1", "--escalate-every", "0")
LANE_URL = re.compile(r".*/lanes/(\d+)/$")
REASONS = "The post quoted a scam message to warn others; it asked nobody for anything."


def _person(browser, live_server, username: str) -> Page:
    page = browser.new_context(viewport={"width": 1366, "height": 860}).new_page()
    browser_login(page, live_server, username)
    if "/accounts/mfa/" in page.url:
        enrol_second_factor(page)  # reversing is overturning: a staff power
    return page


def test_intake_to_reversed_appeal_each_step_once_across_a_killed_worker(
    browser,
    live_server,
    notifying_posts,
    platform,
    standin,
    api,
    alice,
    carol,
    dave,
    spawn_worker,  # noqa: F811
    worker_env,  # noqa: F811
    settings,
):
    posts = notifying_posts
    posts.effect = "webhook"  # the effect of a decision, and of its reversal, reaches the platform
    posts.save(update_fields=["effect"])
    CheckPolicy.objects.create(queue=posts, verdict="reject")  # a removal needs a checker
    env = worker_env(
        REVIEW_TDB_URL=settings.REVIEW_TDB_URL, REVIEW_TDB_TOKEN_ENV=settings.REVIEW_TDB_TOKEN_ENV
    )

    # Intake, decision, check.
    created = api.post(
        "/items",
        intake_body(
            queue="posts",
            key="post-9001",
            subject="Post 9001",
            payload={"text": "Send me your bank password to claim the prize"},
        ),
    )
    assert created.status == 201, created.body
    item = claim_next(queue=posts, reviewer=alice)
    decision = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=item.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(item),
        note="Phishing for bank passwords",
    )
    check = claim_lane_task(queue=posts, kind="check", user=carol)
    confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)

    # The worker applies it: the statement, its notice to the platform, its batch to the TDB.
    first = spawn_worker("--once", *FAST, env=env)
    assert first.wait(timeout=120) == 0, first.output()
    statement = StatementOfReasons.objects.get(decision=decision)
    assert statement.kind == "restriction" and statement.valid
    for job in StatementDelivery.objects.filter(statement=statement):
        assert job.done_at is not None, (job.channel, job.last_error)
    assert list(standin.stored()) == [statement.puid]
    assert statement.puid in platform.kept

    # The affected person appeals through the platform.
    filed = api.post(
        "/appeals",
        {"reference": "ticket-77", "statement": statement.puid, "text": "It was a warning."},
    )
    assert filed.status == 201, filed.body
    appeal = Appeal.objects.get(pk=filed.body["id"])

    # dave, who took no part, decides it in the browser: the evidence, the decision, its
    # statement and the complaint side by side; he reverses it.
    page = _person(browser, live_server, "dave")
    page.get_by_role("button", name="Next appeal in Posts").click()
    page.wait_for_url(LANE_URL)
    assert int(LANE_URL.match(page.url).group(1)) == appeal.task_id
    expect(page.locator("#maker-decision")).to_contain_text("alice")
    expect(page.locator("#appeal-statement")).to_contain_text(statement.puid)
    expect(page.locator("#appeal-text")).to_contain_text("It was a warning.")
    expect(page.locator(".evidence")).to_contain_text("bank password")
    page.locator("label[for=outcome-reverse]").click()
    expect(page.locator("#outcome-reverse")).to_be_checked()
    page.get_by_label("Corrected verdict").select_option("approve")
    page.get_by_label("Overturn reason").select_option("reviewer_error")
    page.get_by_label("Reasons", exact=False).and_(page.locator("textarea")).fill(REASONS)
    page.get_by_role("button", name="Decide the appeal").click()
    page.wait_for_url(f"{live_server.url}/")  # home: no other appeal waits for him
    outcome = LaneOutcome.objects.get(task_id=appeal.task_id)
    assert (outcome.result, outcome.actor_id, outcome.note) == ("overturned", dave.pk, REASONS)
    overturn = Decision.objects.get(pk=outcome.overturn_id)
    assert (overturn.supersedes_id, overturn.corrected_verdict) == (decision.pk, "approve")

    # A worker carries the reversal out and is SIGKILLed while the platform holds its effect.
    platform.arrived.clear()
    platform.release.clear()
    worker = spawn_worker(*FAST, env=env)
    assert platform.arrived.wait(60), worker.output()
    assert platform.keys()[-1] == f"decision-{overturn.pk}"
    worker.signal(signal.SIGKILL)
    assert worker.wait() == -signal.SIGKILL
    platform.release.set()
    # Killed mid-batch: nothing of the reversal's carrying out was committed.
    assert not AppliedDecision.objects.filter(decision=overturn).exists()
    assert not StatementOfReasons.objects.filter(decision=overturn).exists()
    assert AppealNotice.objects.get(appeal=appeal).done_at is None

    # A new worker finishes; a third finds nothing left to do.
    for _ in range(2):
        survivor = spawn_worker("--once", *FAST, env=env)
        assert survivor.wait(timeout=120) == 0, survivor.output()

    # Each exactly once: the effect, the new statement and its notice, the outcome notice.
    assert AppliedDecision.objects.filter(decision=overturn).count() == 1
    effect_key = f"decision-{overturn.pk}"
    assert platform.keys().count(effect_key) == 2  # sent again after the kill, same key
    assert effect_key in platform.kept
    lifted = StatementOfReasons.objects.get(decision=overturn)
    assert (lifted.kind, lifted.replaces_id) == ("lifted", statement.pk)
    notice = StatementDelivery.objects.get(statement=lifted, channel=DeliveryChannel.NOTICE)
    assert (notice.done_at is not None, notice.attempts) == (True, 1)
    assert platform.keys().count(lifted.puid) == 1
    outcome_key = f"appeal-{appeal.pk}-outcome"
    sent = AppealNotice.objects.get(appeal=appeal)
    assert (sent.done_at is not None, sent.attempts) == (True, 1)
    assert platform.keys().count(outcome_key) == 1
    assert platform.keys().index(lifted.puid) < platform.keys().index(outcome_key)
    message = json.loads(platform.kept[outcome_key])
    assert message["outcome"] == "reversed"
    assert message["new_statement_puid"] == lifted.puid
    assert message["reasons"] == REASONS
    # The Transparency Database holds the restriction once; a lifted statement is not its kind.
    assert list(standin.stored()) == [statement.puid]
    status = api.get(f"/appeals/{appeal.pk}").body
    assert (status["status"], status["notice"], status["overturn_id"]) == (
        "reversed",
        "done",
        overturn.pk,
    )
