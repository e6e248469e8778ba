"""The lanes on /ops/, /metrics, doctor, the QA export and the admin item timeline."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client

from queue_app.admin.timeline import item_timeline
from queue_app.exports_qa import qa_export_lines, qa_reviews
from queue_app.models import ReviewItem
from queue_app.ops.doctor_checks import Thresholds, check_lane_backlog
from queue_app.services import (
    adjudicate,
    claim_lane_task,
    claim_next,
    confirm_check,
    record_qa_review,
    return_check,
    submit_decision,
)
from tests.conftest import shown_hash
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(queue, checked_queue, alice, bob, carol, adjudicator):
    """A returned and a confirmed check in recon; a QA disagreement overturned in kyc."""
    decide_one(checked_queue, alice)
    decide_one(checked_queue, alice)
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    return_check(task_id=task.pk, user=carol, lease_token=task.lease_token, note="Explain it")
    task = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=task.pk, user=carol, lease_token=task.lease_token)
    # The returned item is decided again by bob: its new check waits.
    again = claim_next(queue=checked_queue, reviewer=bob)
    submit_decision(
        item_id=again.pk,
        reviewer=bob,
        lease_token=again.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(again),
    )
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    sampled = decide_one(queue, alice)
    task = claim_lane_task(queue=queue, kind="qa", user=carol)
    record_qa_review(
        task_id=task.pk,
        user=carol,
        lease_token=task.lease_token,
        verdict="reject",
        reason_code="fraud",
        note="=cmd",
    )
    task = claim_lane_task(queue=queue, kind="adjudication", user=adjudicator)
    adjudicate(
        task_id=task.pk,
        user=adjudicator,
        lease_token=task.lease_token,
        uphold=False,
        reason_code="reviewer_error",
    )
    return sampled


def test_ops_shows_lane_backlogs_return_rate_and_the_agreement_panel(history, checked_queue):
    root = type(history.reviewer).objects.create_superuser("root", password="pw")
    client = Client()
    client.force_login(root)
    page = client.get("/ops/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="agreement-panel"' in html and "Cohen" in html
    assert 'data-lane="recon-check"' in html
    assert "50% of 2" in html  # one of the two finished checks was returned
    [row] = page.context["agreement_rows"]
    assert (row["n"], row["verdict"], row["disagreements"]) == (1, "0%", 1)


def test_metrics_expose_lane_backlogs_agreement_and_kappa(history, checked_queue):
    text = Client().get("/metrics").content.decode()
    assert 'reviewconsole_lane_tasks_waiting{lane="check",queue="recon"} 1.0' in text
    assert 'reviewconsole_check_return_ratio{queue="recon"} 0.5' in text
    assert 'reviewconsole_qa_reviews_window{queue="kyc"} 1.0' in text
    assert 'reviewconsole_qa_verdict_agreement_ratio{queue="kyc"} 0.0' in text
    assert "reviewconsole_lane_oldest_age_seconds" in text


@pytest.mark.django_db(transaction=True)  # committed: the task's age is real time, not 0
def test_doctor_fires_when_a_lanes_oldest_task_is_too_old(checked_queue, alice):
    assert check_lane_backlog(Thresholds(lane_age=timedelta(0))).ok
    decide_one(checked_queue, alice)
    fired = check_lane_backlog(Thresholds(lane_age=timedelta(0)))
    assert not fired.ok and "Recon Checks: 1 waiting" in fired.summary
    assert check_lane_backlog(Thresholds(lane_age=timedelta(hours=4))).ok


def test_the_qa_export_carries_both_verdicts_and_the_adjudication(history):
    text = "".join(qa_export_lines(qa_reviews(), fmt="csv"))
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert (row["first_reviewer"], row["first_verdict"], row["first_reason"]) == (
        "alice",
        "approve",
        "verified",
    )
    assert (row["qa_reviewer"], row["qa_verdict"], row["qa_reason"]) == ("carol", "reject", "fraud")
    assert (row["agrees_verdict"], row["adjudication"], row["adjudicated_by"]) == (
        "False",
        "overturned",
        "dana",
    )
    assert row["qa_note"] == "'=cmd"  # a spreadsheet formula, neutralised
    out = io.StringIO()
    call_command("export_qa", "--format", "jsonl", stdout=out)
    assert '"qa_verdict": "reject"' in out.getvalue()


def test_the_admin_timeline_shows_every_check_return_qa_and_adjudication(history, checked_queue):
    recon_item = ReviewItem.objects.filter(queue=checked_queue).order_by("pk").first()
    titles = [e.title for e in item_timeline(recon_item).entries]
    assert any("waiting for a checker" in t for t in titles)
    assert any(t.endswith("returned") for t in titles) or any("confirmed" in t for t in titles)
    kyc_titles = [(e.title, e.who) for e in item_timeline(history.item).entries]
    assert any("drawn for a blind QA review" in t for t, _ in kyc_titles)
    assert any("QA of decision" in t and "carol" in who for t, who in kyc_titles)
    assert any("Adjudication of decision" in t and "dana" in who for t, who in kyc_titles)
