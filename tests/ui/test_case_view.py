"""The item page as a case view: its header, its one timeline, and what the timeline may not say
(blind QA, the suggestion display policy); and axe on every case page in light and dark."""

from __future__ import annotations

import html
import re

import pytest
from playwright.sync_api import Page

from queue_app.models import Queue
from queue_app.services import (
    claim_lane_task,
    claim_next,
    overturn_decision,
    put_attachment,
    record_qa_review,
    record_reveal,
    return_check,
    submit_decision,
)
from tests.accessibility import assert_accessible
from tests.attachments.conftest import image_bytes
from tests.conftest import shown_hash
from tests.console.conftest import login
from tests.lanes.conftest import decide_one
from tests.suggestions.conftest import suggested_item
from tests.ui.conftest import CASE_PAGES, VIEWPORTS, open_case_page

SECRET_NOTE = "Zq-maker-secret-note"


def _timeline(page: str) -> str:
    """The timeline's section of an item page, as text."""
    section = page.split('id="timeline-title"')[1].split("</section>")[0]
    return html.unescape(re.sub(r"<[^>]+>", " ", section))


def _header(page: str) -> str:
    section = page.split('<header class="rc-case-header"')[1].split("</header>")[0]
    return html.unescape(re.sub(r"<[^>]+>", " ", section))


@pytest.mark.django_db(transaction=True)  # each step commits: each has its own time
def test_one_timeline_tells_intake_leases_decisions_checks_documents_and_reveals(
    checked_queue, alice, carol, supervisor
):
    decision = decide_one(checked_queue, alice, note="Write-off agreed")
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="Wrong split")
    item = put_attachment(
        item_id=decision.item_id, actor=supervisor, name="selfie", data=image_bytes()
    )
    record_reveal(item=item, user=carol, name="selfie", sha256=item.attachments["selfie"]["sha256"])
    page = login(supervisor).get(f"/items/{item.pk}/").content.decode()
    text = " ".join(_timeline(page).split())
    # Newest first, each once: the lane outcome stands for its event, the decision for 'decided'.
    expected = [
        "Sensitive image revealed carol",
        f"Attachment added or replaced {supervisor.username}",
        "Check: returned carol",
        "Wrong split",
        "Check opened",
        "Approve alice",
        "returned by the checker",
        "Write-off agreed",
        "Claimed alice",
        "Received",
    ]
    positions = [text.find(words) for words in expected]
    assert -1 not in positions, (expected, text)
    assert positions == sorted(positions), text
    assert text.count("Check: returned") == 1 and "Decided" not in text
    assert "Document: selfie" in text
    # The case header names who else acted on the item, not the viewer.
    header = " ".join(_header(page).split())
    assert "Also touched by carol, alice" in header


@pytest.mark.django_db(transaction=True)
def test_an_overturn_is_on_the_timeline_above_what_it_replaced(queue, alice, supervisor):
    decision = decide_one(queue, alice)
    overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    text = " ".join(
        _timeline(login(alice).get(f"/items/{decision.item_id}/").content.decode()).split()
    )
    assert f"Overturn → reject {supervisor.username}" in text
    # Newest first, and what became of alice's approval.
    assert text.index("Overturn") < text.index("Approve alice") < text.index("Received")
    assert text.index("Approve alice") < text.index("overturned") < text.index("Claimed")


@pytest.mark.django_db
def test_the_timeline_pages_through_a_long_history(queue, alice):
    from queue_app.models import ItemEvent

    decision = decide_one(queue, alice)
    ItemEvent.objects.bulk_create(
        ItemEvent(item_id=decision.item_id, kind="released", actor=alice) for _ in range(60)
    )
    client = login(alice)
    first = client.get(f"/items/{decision.item_id}/").content.decode()
    assert _timeline(first).count("Released") == 50
    assert "Show all events" in first and "Received" not in _timeline(first)
    everything = client.get(f"/items/{decision.item_id}/?timeline=all").content.decode()
    assert _timeline(everything).count("Released") == 60
    assert "Received" in _timeline(everything) and "Show older events" not in everything


@pytest.mark.django_db
def test_a_blind_qa_reviewer_sees_no_decision_and_no_name_in_the_timeline(queue, alice, bob):
    Queue.objects.filter(pk=queue.pk).update(qa_rate=100)
    queue.refresh_from_db()
    decision = decide_one(queue, alice, note=SECRET_NOTE)
    task = claim_lane_task(queue=queue, kind="qa", user=bob)
    assert task is not None and task.decision_id == decision.pk
    client = login(bob)
    page = client.get(f"/items/{decision.item_id}/").content.decode()
    timeline = _timeline(page)
    assert "Hidden while you hold this item's blind QA review." in timeline
    assert SECRET_NOTE not in page
    assert "alice" not in timeline and "alice" not in _header(page)
    assert "Approve" not in timeline and "verified" not in timeline.lower()
    assert "QA review opened" in timeline  # what happened, without who or what was decided
    # Once bob's review is recorded the rule is lifted: the decision is on the timeline.
    record_qa_review(
        task_id=task.pk,
        user=bob,
        lease_token=task.lease_token,
        verdict="approve",
        reason_code="verified",
    )
    after = _timeline(client.get(f"/items/{decision.item_id}/").content.decode())
    assert SECRET_NOTE in after and "alice" in after and "QA review: qa reviewed" in after


@pytest.mark.django_db
@pytest.mark.parametrize("display", ["hidden", "on_request"])
def test_what_was_seen_of_a_suggestion_is_told_only_where_the_page_shows_it(
    queue, alice, bob, display
):
    Queue.objects.filter(pk=queue.pk).update(suggestion_display=display)
    item = suggested_item(queue, "t1")  # the machine suggests reject
    leased = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=leased.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(leased),
        suggestion_view="not_shown",
    )
    # "Not shown; followed" next to "Reject" would tell bob what the machine suggested.
    page = login(bob).get(f"/items/{item.pk}/").content.decode()
    assert "followed" not in _timeline(page) and "Suggestion:" not in page
    Queue.objects.filter(pk=queue.pk).update(suggestion_display="shown")
    page = login(bob).get(f"/items/{item.pk}/").content.decode()
    assert "Suggestion: Not shown; followed" in _timeline(page)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", CASE_PAGES)
def test_each_case_page_is_accessible_in_light_and_dark_on_a_phone_and_a_laptop(
    kind, page: Page, live_server, queue, checked_queue, case_users
):
    url = open_case_page(
        kind, page, live_server, queue=queue, checked=checked_queue, users=case_users
    )
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for size in ("phone", "laptop"):
            page.set_viewport_size(VIEWPORTS[size])
            page.goto(url)
            assert_accessible(page, f"the {kind} page, {scheme}, {size}")


@pytest.mark.django_db
def test_an_escalation_is_on_the_timeline(queue, alice):
    decision = decide_one(queue, alice, verdict="escalate", reason="policy_gap")
    page = login(alice).get(f"/items/{decision.item_id}/").content.decode()
    assert '<span class="rc-badge rc-badge--warning">Escalate</span>' in page
    assert "Escalate alice" in " ".join(_timeline(page).split())
    assert "Reason: policy_gap" in _timeline(page)


@pytest.mark.django_db
def test_every_branch_of_the_timeline_reads_through_an_index_on_the_item(queue, alice):
    from django.db import connection

    from queue_app.db.statements import timeline as timeline_sql

    decision = decide_one(queue, alice)
    params = {"item_id": decision.item_id, "viewer_id": alice.pk, "limit": 51, "offset": 0}
    with connection.cursor() as cursor:
        # On a table this small the planner would scan anyway: forbid it, so a branch without
        # an index to serve it shows up as the Seq Scan it would be on a large table.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + timeline_sql.ITEM_TIMELINE, {**params, "reach": 51})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    for table in ("queue_app_itemevent", "queue_app_decision", "queue_app_lanetask"):
        assert f"Seq Scan on {table}" not in plan, plan
        assert re.search(rf"Index (Only )?Scan.* on {table}", plan), plan
