"""Deciding an appeal: uphold, or reverse through the overturn machinery; the outcome notice
goes out once, a reversal's only after its overturn took effect and its statement was sent."""

from __future__ import annotations

import json

import pytest

from queue_app import appeal_delivery, delivery
from queue_app.apply import apply_batch
from queue_app.errors import InvalidBounds
from queue_app.models import (
    AppealNotice,
    Decision,
    ItemEvent,
    LaneOutcome,
    StatementDelivery,
    StatementOfReasons,
)
from queue_app.services import appeals, claim_lane_task
from tests.appeals.conftest import file, restricted

pytestmark = pytest.mark.django_db


@pytest.fixture
def appeal(notifying_posts, alice, forwarder):
    statement = restricted(notifying_posts, alice)
    delivery.deliver_notices()  # the statement's own notice is out before anyone appeals
    return file(forwarder[0], statement)


def claimed(appeal, user):
    task = claim_lane_task(queue=appeal.queue, kind="appeal", user=user)
    assert task is not None and task.pk == appeal.task_id
    return task


def reversed_under_four_eyes(appeal, user, queue):
    """The queue checks approvals; user reverses the appeal to approve: a reversal whose
    overturn now waits for its checker. Returns the appeal's outcome."""
    from queue_app.models import CheckPolicy

    CheckPolicy.objects.create(queue=queue, verdict="approve")
    task = claimed(appeal, user)
    return appeals.decide_appeal(
        task_id=task.pk,
        user=user,
        lease_token=task.lease_token,
        reverse=True,
        corrected_verdict="approve",
        reason_code="reviewer_error",
        reasons="A warning, not a scam.",
    )


def outcome_notices(platform):
    return [
        json.loads(body)
        for headers, body in platform.requests
        if headers["Idempotency-Key"].startswith("appeal-")
    ]


def test_upholding_records_the_outcome_and_sends_its_notice_once(appeal, dave, platform, api):
    task = claimed(appeal, dave)
    outcome = appeals.decide_appeal(
        task_id=task.pk,
        user=dave,
        lease_token=task.lease_token,
        reverse=False,
        reasons="The post asked readers for their bank password.",
    )
    assert (outcome.result, outcome.overturn_id) == ("upheld", None)
    assert AppealNotice.objects.filter(appeal=appeal).count() == 1
    assert ItemEvent.objects.filter(kind="appeal_decided", item_id=appeal.item_id).count() == 1
    assert api.get(f"/appeals/{appeal.pk}").body["status"] == "upheld"

    assert appeal_delivery.deliver_appeal_notices() == 1
    assert appeal_delivery.deliver_appeal_notices() == 0
    [sent] = outcome_notices(platform)
    assert sent["type"] == "review.appeal_outcome"
    assert (sent["outcome"], sent["reasons"]) == (
        "upheld",
        "The post asked readers for their bank password.",
    )
    assert sent["further_redress"]["judicial_redress"] is True
    assert "Article 21" in sent["text"] and "court" in sent["text"]
    assert "<article" in sent["html"]
    assert api.get(f"/appeals/{appeal.pk}").body["notice"] == "done"
    # The decision stands: nothing overturned it.
    assert not Decision.objects.filter(supersedes_id=appeal.decision_id).exists()


def test_reversing_overturns_through_the_machinery_and_tells_the_person_after_it_took_effect(
    appeal, dave, platform, notifying_posts
):
    task = claimed(appeal, dave)
    outcome = appeals.decide_appeal(
        task_id=task.pk,
        user=dave,
        lease_token=task.lease_token,
        reverse=True,
        corrected_verdict="approve",
        reason_code="reviewer_error",
        reasons="The post quoted a scam to warn others; it asked nobody for anything.",
    )
    overturn = Decision.objects.get(pk=outcome.overturn_id)
    assert (overturn.verdict, overturn.corrected_verdict) == ("overturn", "approve")
    assert (overturn.supersedes_id, overturn.reviewer_id) == (appeal.decision_id, dave.pk)
    # Not applied yet: the outcome notice waits for the reversal to take effect.
    assert appeal_delivery.deliver_appeal_notices() == 0
    while apply_batch():
        pass
    lifted = StatementOfReasons.objects.get(decision=overturn)
    assert lifted.kind == "lifted" and lifted.replaces_id == appeal.statement_id
    # ...and for the new statement's own notice.
    assert appeal_delivery.deliver_appeal_notices() == 0
    assert delivery.deliver_notices() == 1
    assert appeal_delivery.deliver_appeal_notices() == 1
    assert appeal_delivery.deliver_appeal_notices() == 0

    keys = platform.keys()
    assert keys.index(lifted.puid) < keys.index(f"appeal-{appeal.pk}-outcome")
    [sent] = outcome_notices(platform)
    assert sent["outcome"] == "reversed"
    assert sent["corrected_verdict"] == "approve"
    assert sent["new_statement_puid"] == lifted.puid
    assert sent["statement_puid"] == appeal.statement.puid
    assert StatementOfReasons.objects.filter(decision=overturn).count() == 1
    assert StatementDelivery.objects.filter(statement=lifted).count() == 1  # the notice


def test_an_appeal_without_reasons_is_refused_and_nothing_is_recorded(appeal, dave):
    task = claimed(appeal, dave)
    with pytest.raises(InvalidBounds):
        appeals.decide_appeal(
            task_id=task.pk, user=dave, lease_token=task.lease_token, reverse=False, reasons=" "
        )
    assert not LaneOutcome.objects.filter(task_id=task.pk).exists()
    assert not AppealNotice.objects.exists()


def test_a_dead_notice_is_counted_and_the_outcome_stays(appeal, dave, platform):
    task = claimed(appeal, dave)
    appeals.decide_appeal(
        task_id=task.pk, user=dave, lease_token=task.lease_token, reverse=False, reasons="Stands."
    )
    platform.replies.append(410)
    assert appeal_delivery.deliver_appeal_notices() == 1
    notice = AppealNotice.objects.get(appeal=appeal)
    assert notice.dead and "410" in notice.last_error
    from queue_app.selectors.appeal_figures import read_appeal_figures

    [figures] = read_appeal_figures()
    assert figures.notices_dead == 1


def test_a_reversal_the_check_policy_covers_waits_for_its_checker(
    appeal, dave, carol, platform, notifying_posts
):
    """Four eyes as for any overturn: the queue checks approvals, so the reversal waits for a
    second person, and the person hears of it only once it took effect."""
    from queue_app.services import confirm_check

    outcome = reversed_under_four_eyes(appeal, dave, notifying_posts)
    while apply_batch():
        pass
    assert not StatementOfReasons.objects.filter(decision_id=outcome.overturn_id).exists()
    assert appeal_delivery.deliver_appeal_notices() == 0
    check = claim_lane_task(queue=notifying_posts, kind="check", user=carol)
    assert check.decision_id == outcome.overturn_id
    confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)
    while apply_batch():
        pass
    assert delivery.deliver_notices() == 1
    assert appeal_delivery.deliver_appeal_notices() == 1
    [sent] = outcome_notices(platform)
    assert sent["outcome"] == "reversed"


def test_a_reversal_its_checker_returns_is_shown_as_not_final_and_its_notice_is_held(
    appeal, dave, carol, platform, notifying_posts, client, api
):
    """The checker returns the reversal's overturn: the decision appealed still stands, so the
    appeal is not "reversed". Its task and outcome are append-only (one appeal task per
    decision), so the lane cannot decide it again: every surface says so, and the notice is
    held, never sent as "reversed"."""
    from django.urls import reverse

    from queue_app.models import DecisionStatus
    from queue_app.selectors.appeal_figures import read_appeal_figures
    from queue_app.services import return_check

    outcome = reversed_under_four_eyes(appeal, dave, notifying_posts)
    check = claim_lane_task(queue=notifying_posts, kind="check", user=carol)
    assert check.decision_id == outcome.overturn_id
    return_check(task_id=check.pk, user=carol, lease_token=check.lease_token, note="It was a scam.")
    while apply_batch():
        pass
    overturn = Decision.objects.get(pk=outcome.overturn_id)
    assert overturn.story.status == DecisionStatus.RETURNED
    # The returned overturn stays in the log; the appeal's outcome names it.
    assert LaneOutcome.objects.get(task_id=appeal.task_id).overturn_id == overturn.pk

    assert appeal_delivery.deliver_appeal_notices() == 0
    assert outcome_notices(platform) == []
    assert AppealNotice.objects.get(appeal=appeal).status == "waiting"

    answer = api.get(f"/appeals/{appeal.pk}").body
    assert (answer["status"], answer["notice"]) == ("reversal_returned", "held")

    [figures] = read_appeal_figures()
    assert figures.reversals_returned == 1

    client.force_login(dave)
    page = client.get(reverse("lane-task", args=[appeal.task_id])).content.decode()
    assert 'id="appeal-reversal-returned"' in page
    assert f"Overturn #{overturn.pk} was returned by its checker" in page
