"""Who may work a lane is decided again in the statement that claims, renews or finishes a task.

The services ask first, in Python, to refuse in plain words; these tests make that first answer
wrong (a user object whose permissions Django has cached, a group removed after the claim) and
show the statement refusing anyway, with nothing recorded.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission

from queue_app.errors import NotPermitted, StaleLease
from queue_app.models import LaneOutcome, LaneTask, ReviewItem
from queue_app.services import (
    adjudicate,
    claim_lane_task,
    confirm_check,
    record_qa_review,
    renew_lane_task,
    return_check,
)
from queue_app.services.lanes import LANE_ACCESS_LOST, lanes_for_user
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db

CAN_OVERTURN = "queue_app.can_overturn"


def _nothing_recorded(task: LaneTask) -> None:
    task.refresh_from_db()
    assert task.state == "open"
    assert not LaneOutcome.objects.filter(task_id=task.pk).exists()


@pytest.fixture
def check(held) -> LaneTask:
    """A check of alice's decision, leased to carol (conftest's held)."""
    return held


@pytest.mark.parametrize("finish", ["confirm", "return"])
def test_a_checker_who_lost_the_queue_after_the_claim_cannot_finish_the_check(
    finish, check, carol, reviewers_group
):
    carol.groups.remove(reviewers_group)
    with pytest.raises(NotPermitted, match=LANE_ACCESS_LOST):
        if finish == "confirm":
            confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)
        else:
            return_check(
                task_id=check.pk, user=carol, lease_token=check.lease_token, note="Wrong amount."
            )
    _nothing_recorded(check)
    assert ReviewItem.objects.get(pk=check.item_id).state == "awaiting_check"
    # Given the queue back, the same lease finishes the check.
    carol.groups.add(reviewers_group)
    confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)
    assert ReviewItem.objects.get(pk=check.item_id).state == "decided"


def test_a_qa_reviewer_who_lost_the_queue_cannot_record_the_review(
    queue, alice, carol, reviewers_group
):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice)
    task = claim_lane_task(queue=queue, kind="qa", user=carol)
    assert task is not None
    carol.groups.remove(reviewers_group)
    with pytest.raises(NotPermitted, match=LANE_ACCESS_LOST):
        record_qa_review(
            task_id=task.pk,
            user=carol,
            lease_token=task.lease_token,
            verdict="reject",
            reason_code="fraud",
        )
    _nothing_recorded(task)
    assert not LaneTask.objects.filter(kind="adjudication").exists()


@pytest.fixture
def adjudication(queue, alice, carol) -> LaneTask:
    """An open adjudication: carol's blind QA review disagreed with alice's decision."""
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice)
    qa = claim_lane_task(queue=queue, kind="qa", user=carol)
    record_qa_review(
        task_id=qa.pk, user=carol, lease_token=qa.lease_token, verdict="reject", reason_code="fraud"
    )
    return LaneTask.objects.get(kind="adjudication")


def _revoke_behind_djangos_cache(user) -> None:
    """Remove can_overturn in the database while this user object still says it holds it.

    Django's backend caches a user's permissions on the object for its lifetime (a request);
    a permission removed meanwhile is what the statement must catch.
    """
    assert user.has_perm(CAN_OVERTURN)  # fills the cache
    user.user_permissions.remove(Permission.objects.get(codename="can_overturn"))
    assert user.has_perm(CAN_OVERTURN)  # still cached: the service's own check passes


def test_an_adjudicator_whose_permission_went_cannot_settle_renew_or_claim(
    adjudication, adjudicator, queue
):
    task = claim_lane_task(queue=queue, kind="adjudication", user=adjudicator)
    assert task is not None and task.pk == adjudication.pk
    _revoke_behind_djangos_cache(adjudicator)

    with pytest.raises(NotPermitted, match=LANE_ACCESS_LOST):
        adjudicate(task_id=task.pk, user=adjudicator, lease_token=task.lease_token, uphold=True)
    _nothing_recorded(task)
    with pytest.raises(StaleLease):
        renew_lane_task(task_id=task.pk, user=adjudicator, lease_token=task.lease_token)
    # Not re-leased either: the claim's own gate says no, so the lane looks empty to them.
    assert claim_lane_task(queue=queue, kind="adjudication", user=adjudicator) is None


def test_a_deactivated_superuser_cannot_settle_an_adjudication(adjudication, queue):
    from django.contrib.auth.models import User

    root = User.objects.create_superuser("root", password="pw-root")
    task = claim_lane_task(queue=queue, kind="adjudication", user=root)
    assert task is not None
    User.objects.filter(pk=root.pk).update(is_active=False)  # root's object still says active
    with pytest.raises(NotPermitted, match=LANE_ACCESS_LOST):
        adjudicate(task_id=task.pk, user=root, lease_token=task.lease_token, uphold=True)
    _nothing_recorded(task)


def test_can_overturn_through_a_group_works_the_lane(adjudication, queue, reviewers_group):
    from django.contrib.auth.models import User

    settlers = Group.objects.create(name="settlers")
    settlers.permissions.add(Permission.objects.get(codename="can_overturn"))
    erin = User.objects.create_user("erin", password="pw-erin")
    erin.groups.add(reviewers_group, settlers)
    assert any(lane["kind"] == "adjudication" for lane in lanes_for_user(user=erin))
    task = claim_lane_task(queue=queue, kind="adjudication", user=erin)
    assert task is not None
    outcome = adjudicate(task_id=task.pk, user=erin, lease_token=task.lease_token, uphold=True)
    assert outcome.result == "upheld"
    # Out of the group, the next adjudication is not theirs: the home page lists none.
    erin.groups.remove(settlers)
    erin = User.objects.get(pk=erin.pk)
    assert not any(lane["kind"] == "adjudication" for lane in lanes_for_user(user=erin))
