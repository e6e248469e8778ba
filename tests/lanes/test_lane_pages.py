"""The lane pages: home lists the lanes, Next check leases, the check and QA pages, keys."""

from __future__ import annotations

import pytest
from django.test import Client

from queue_app.models import EffectJob, LaneOutcome, LaneTask, ReviewItem
from queue_app.services import claim_lane_task, record_qa_review
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db


def _as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_home_lists_the_lanes_with_count_and_age(checked_queue, alice, carol):
    decide_one(checked_queue, alice)
    page = _as(carol).get("/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-lane="check"' in html and "Next check" in html
    assert page.context["lanes"][0]["open"] == 1


def test_next_check_leases_and_opens_the_check_page(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice, note="")
    client = _as(carol)
    response = client.post(f"/queues/{checked_queue.slug}/lanes/check/next/")
    task = LaneTask.objects.get(decision=decision)
    assert response.status_code == 302 and response["Location"] == f"/lanes/{task.pk}/"
    page = client.get(response["Location"])
    html = page.content.decode()
    assert "The maker&#x27;s decision" in html or "The maker's decision" in html
    assert 'id="confirm-form"' in html and 'aria-keyshortcuts="c"' in html
    assert "alice" in html  # the maker is named on a check


def test_confirm_from_the_page_writes_the_effect_job(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice)
    client = _as(carol)
    client.post(f"/queues/{checked_queue.slug}/lanes/check/next/")
    task = LaneTask.objects.get(decision=decision)
    response = client.post(f"/lanes/{task.pk}/confirm/", {"lease_token": str(task.lease_token)})
    assert response.status_code == 302
    assert EffectJob.objects.filter(decision=decision).exists()


def test_return_without_a_note_keeps_the_page_and_records_nothing(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice)
    client = _as(carol)
    client.post(f"/queues/{checked_queue.slug}/lanes/check/next/")
    task = LaneTask.objects.get(decision=decision)
    response = client.post(
        f"/lanes/{task.pk}/return/", {"lease_token": str(task.lease_token), "note": ""}
    )
    assert response.status_code == 400
    assert not LaneOutcome.objects.exists()
    response = client.post(
        f"/lanes/{task.pk}/return/", {"lease_token": str(task.lease_token), "note": "Why?"}
    )
    assert response.status_code == 302
    assert ReviewItem.objects.get(pk=decision.item_id).state == "pending"


def test_the_qa_page_hides_the_first_verdict_reason_note_and_reviewer(queue, alice, carol):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice, verdict="reject", reason="document_expired", note="SECRET-NOTE")
    client = _as(carol)
    response = client.post(f"/queues/{queue.slug}/lanes/qa/next/")
    page = client.get(response["Location"])
    html = page.content.decode()
    assert page.status_code == 200 and 'id="qa-form"' in html
    assert "SECRET-NOTE" not in html
    assert "alice" not in html
    assert 'id="maker-decision"' not in html
    assert page.context["decision"] is None


def test_the_maker_cannot_open_someone_elses_lease_to_act(checked_queue, alice, carol, bob):
    decision = decide_one(checked_queue, alice)
    _as(carol).post(f"/queues/{checked_queue.slug}/lanes/check/next/")
    task = LaneTask.objects.get(decision=decision)
    # bob may read it (he reviews the queue) but holds no lease: no form, and a forged post
    # with carol's token is refused by the fence.
    page = _as(bob).get(f"/lanes/{task.pk}/")
    assert 'id="confirm-form"' not in page.content.decode()
    _as(bob).post(f"/lanes/{task.pk}/confirm/", {"lease_token": str(task.lease_token)})
    assert not EffectJob.objects.filter(decision=decision).exists()


def test_an_outsider_sees_no_lane_and_no_task(checked_queue, alice, outsider):
    decision = decide_one(checked_queue, alice)
    task = LaneTask.objects.get(decision=decision)
    assert _as(outsider).get(f"/lanes/{task.pk}/").status_code == 404
    assert _as(outsider).post(f"/queues/{checked_queue.slug}/lanes/check/next/").status_code == 403


def test_the_item_page_says_a_decision_awaits_its_check(checked_queue, alice, carol):
    decision = decide_one(checked_queue, alice)
    html = _as(carol).get(f"/items/{decision.item_id}/").content.decode()
    assert 'id="awaiting-check"' in html and "second person" in html


def test_it_leaves_the_makers_own_check_out_of_her_home_count(checked_queue, alice, carol):
    # alice's decision awaits its check: nothing in the lane is hers to take, so her home
    # page offers no Next check; carol's counts it.
    decide_one(checked_queue, alice)
    mine = _as(alice).get("/")
    [lane] = [lane for lane in mine.context["lanes"] if lane["kind"] == "check"]
    assert (lane["open"], lane["oldest"]) == (0, None)
    html = mine.content.decode()
    assert 'class="lane-next-form"' not in html and "Nothing waiting" in html
    assert _as(alice).post(f"/queues/{checked_queue.slug}/lanes/check/next/").status_code == 302
    assert LaneTask.objects.get().lease_owner_id is None  # and indeed the claim gives her none
    [lane] = [lane for lane in _as(carol).get("/").context["lanes"] if lane["kind"] == "check"]
    assert lane["open"] == 1


def test_it_leaves_the_qa_reviewers_own_disagreement_out_of_their_adjudication_count(
    queue, alice, adjudicator, carol
):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice)
    qa = claim_lane_task(queue=queue, kind="qa", user=adjudicator)
    record_qa_review(
        task_id=qa.pk,
        user=adjudicator,
        lease_token=qa.lease_token,
        verdict="reject",
        reason_code="fraud",
    )
    lanes = _as(adjudicator).get("/").context["lanes"]
    assert [lane["open"] for lane in lanes if lane["kind"] == "adjudication"] in ([], [0])


def test_it_shows_the_checkers_return_note_to_the_maker_on_the_item_and_the_task(
    checked_queue, alice, carol
):
    decision = decide_one(checked_queue, alice)
    client = _as(carol)
    client.post(f"/queues/{checked_queue.slug}/lanes/check/next/")
    task = LaneTask.objects.get(decision=decision)
    note = "Variance is in USD, not EUR <b>check</b>"
    client.post(f"/lanes/{task.pk}/return/", {"lease_token": str(task.lease_token), "note": note})
    # The item comes back to the maker with the note where she decides.
    maker = _as(alice)
    opened = maker.post(f"/queues/{checked_queue.slug}/next/")
    assert opened["Location"] == f"/items/{decision.item_id}/"
    html = maker.get(opened["Location"]).content.decode()
    assert 'id="check-return"' in html and 'id="decision-form"' in html
    escaped = "Variance is in USD, not EUR &lt;b&gt;check&lt;/b&gt;"
    assert escaped in html.split('id="check-return"')[1].split("</div>")[0]
    assert "Returned by carol" in html
    assert html.count(escaped) == 2  # and under the returned decision in the history
    # The check's page says it too, to the maker as to anyone who opens it.
    page = maker.get(f"/lanes/{task.pk}/").content.decode()
    assert 'id="lane-outcome-note"' in page and escaped in page
