"""Appeals in the admin, read-only: the complaint, the decision, the outcome and the notice;
a dead outcome notice is retried there as a statement's dead delivery is, and sent once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from queue_app import appeal_delivery, delivery
from queue_app.models import AppealNotice
from queue_app.services import appeals, claim_lane_task, retry_appeal_notices
from tests.appeals.conftest import file, restricted
from tests.conftest import with_permission

pytestmark = pytest.mark.django_db

LIST = "/admin/queue_app/appeal/"


@pytest.fixture
def operator(db) -> User:
    """Staff who may read appeals and retry their outcome notices."""
    user = User.objects.create_user("otto", password="pw-otto", is_staff=True)
    with_permission(user, "view_appeal")
    return with_permission(user, "change_appealnotice")


@pytest.fixture
def dead_notice(notifying_posts, alice, forwarder, dave, platform):
    """An appeal upheld whose outcome notice the platform refused for good (410)."""
    statement = restricted(notifying_posts, alice)
    delivery.deliver_notices()
    appeal = file(forwarder[0], statement)
    task = claim_lane_task(queue=appeal.queue, kind="appeal", user=dave)
    appeals.decide_appeal(
        task_id=task.pk,
        user=dave,
        lease_token=task.lease_token,
        reverse=False,
        reasons="The post asked for a password; it stands.",
    )
    platform.replies.append(410)
    assert appeal_delivery.deliver_appeal_notices() == 1
    assert AppealNotice.objects.get(appeal=appeal).dead
    return appeal


def test_the_admin_shows_the_appeal_and_retries_its_dead_notice_once(
    dead_notice, operator, client, platform
):
    client.force_login(operator)
    listed = client.get(LIST, {"notice": "dead"})
    assert listed.status_code == 200
    assert dead_notice.reference in listed.content.decode()
    assert dead_notice.reference not in client.get(LIST, {"notice": "done"}).content.decode()
    assert dead_notice.reference in client.get(LIST, {"state": "upheld"}).content.decode()

    page = client.get(f"{LIST}{dead_notice.pk}/change/").content.decode()
    for shown in (
        "Please look again: the post warned others about this scam.",  # the complaint
        "The post asked for a password; it stands.",  # the reasons
        "upheld",
        "DEAD",
        "HTTP 410",
    ):
        assert shown in page, shown
    assert 'name="_save"' not in page  # read-only

    answer = client.post(
        LIST, {"action": "retry_notice", "_selected_action": [dead_notice.pk]}, follow=True
    )
    assert "Put 1 dead outcome notice(s) back in line." in answer.content.decode()
    notice = AppealNotice.objects.get(appeal=dead_notice)
    assert not notice.dead and notice.attempts == 0
    assert appeal_delivery.deliver_appeal_notices() == 1
    assert appeal_delivery.deliver_appeal_notices() == 0
    notice.refresh_from_db()
    assert notice.status == "done"
    sent = [h for h, _ in platform.requests if h["Idempotency-Key"].startswith("appeal-")]
    assert len(sent) == 2  # the refused attempt, and the retry


def test_retrying_needs_the_permission(dead_notice, client):
    viewer = with_permission(
        User.objects.create_user("vera", password="pw-vera", is_staff=True), "view_appeal"
    )
    with pytest.raises(PermissionDenied):
        retry_appeal_notices(appeal_ids=[dead_notice.pk], operator=viewer)
    client.force_login(viewer)
    client.post(LIST, {"action": "retry_notice", "_selected_action": [dead_notice.pk]})
    assert AppealNotice.objects.get(appeal=dead_notice).dead
