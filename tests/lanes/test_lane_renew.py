"""A lane task's lease heartbeat: the page renews its holder's lease, fenced by the token."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from queue_app.errors import StaleLease
from queue_app.models import LaneTask
from queue_app.services import claim_lane_task, confirm_check, renew_lane_task
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db

JSON = {"HTTP_ACCEPT": "application/json"}


def _as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _backdate(task: LaneTask, seconds: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_lanetask SET lease_expires = now() - make_interval(secs => %s) "
            "WHERE id = %s",
            [seconds, task.pk],
        )


def test_renew_extends_the_holders_lease_by_the_queues_ttl(held, carol, checked_queue):
    _backdate(held, -30)  # 30 s left
    expires = renew_lane_task(task_id=held.pk, user=carol, lease_token=held.lease_token)
    left = expires - timezone.now()
    assert checked_queue.lease_ttl - timedelta(seconds=5) < left <= checked_queue.lease_ttl
    held.refresh_from_db()
    assert held.lease_expires == expires and held.lease_owner_id == carol.pk


def test_a_lapsed_lease_nobody_took_is_renewed(held, carol):
    _backdate(held, 60)
    expires = renew_lane_task(task_id=held.pk, user=carol, lease_token=held.lease_token)
    assert expires > timezone.now()


def test_renew_refuses_a_foreign_token_another_user_and_a_finished_task(held, carol, bob):
    with pytest.raises(StaleLease):
        renew_lane_task(task_id=held.pk, user=carol, lease_token=uuid.uuid4())
    with pytest.raises(StaleLease):
        renew_lane_task(task_id=held.pk, user=bob, lease_token=held.lease_token)
    confirm_check(task_id=held.pk, user=carol, lease_token=held.lease_token)
    with pytest.raises(StaleLease, match="already finished this task"):
        renew_lane_task(task_id=held.pk, user=carol, lease_token=held.lease_token)


def test_renew_refuses_the_old_token_once_someone_else_took_the_lapsed_task(
    held, checked_queue, carol, bob
):
    _backdate(held, 60)
    taken = claim_lane_task(queue=checked_queue, kind="check", user=bob)
    assert taken is not None and taken.pk == held.pk
    with pytest.raises(StaleLease, match="no longer leased to you"):
        renew_lane_task(task_id=held.pk, user=carol, lease_token=held.lease_token)
    taken.refresh_from_db()
    assert taken.lease_owner_id == bob.pk


def test_a_checker_who_lost_the_queue_does_not_get_their_lease_renewed(
    held, carol, reviewers_group
):
    # Checked in the statement itself, not only by the page that sent the heartbeat.
    carol.groups.remove(reviewers_group)
    with pytest.raises(StaleLease):
        renew_lane_task(task_id=held.pk, user=carol, lease_token=held.lease_token)


def test_the_heartbeat_answers_json(held, carol, bob):
    response = _as(carol).post(
        f"/lanes/{held.pk}/renew/", {"lease_token": str(held.lease_token)}, **JSON
    )
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and body["expires_in"] > 0

    stale = _as(carol).post(f"/lanes/{held.pk}/renew/", {"lease_token": str(uuid.uuid4())}, **JSON)
    assert stale.status_code == 409 and stale.json()["ok"] is False
    # bob reviews this queue, so he may open the task; only its holder's lease is renewed.
    other = _as(bob).post(
        f"/lanes/{held.pk}/renew/", {"lease_token": str(held.lease_token)}, **JSON
    )
    assert other.status_code == 409


def test_the_heartbeat_refuses_garbage_and_gets(held, carol, outsider):
    client = _as(carol)
    for data in ({}, {"lease_token": "not-a-uuid"}, {"lease_token": "\x00"}):
        response = client.post(f"/lanes/{held.pk}/renew/", data, **JSON)
        assert response.status_code == 409, data
    assert client.get(f"/lanes/{held.pk}/renew/").status_code == 405
    missing = client.post("/lanes/999999/renew/", {"lease_token": str(held.lease_token)}, **JSON)
    assert missing.status_code == 404 and missing.json()["ok"] is False
    hidden = _as(outsider).post(
        f"/lanes/{held.pk}/renew/", {"lease_token": str(held.lease_token)}, **JSON
    )
    assert hidden.status_code == 404


def test_the_page_carries_the_heartbeat(held, carol):
    page = _as(carol).get(f"/lanes/{held.pk}/").content.decode()
    assert f'data-renew-url="/lanes/{held.pk}/renew/"' in page
    assert 'data-lease-of="task"' in page
    assert 'id="lease-countdown"' in page
    assert 'id="stale-banner"' in page


def test_an_adjudication_is_renewed_only_while_its_holder_may_overturn(
    queue, alice, carol, adjudicator
):
    from django.contrib.auth.models import Permission

    from queue_app.services import record_qa_review

    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decide_one(queue, alice)
    qa = claim_lane_task(queue=queue, kind="qa", user=carol)
    record_qa_review(
        task_id=qa.pk, user=carol, lease_token=qa.lease_token, verdict="reject", reason_code="fraud"
    )
    task = claim_lane_task(queue=queue, kind="adjudication", user=adjudicator)
    assert task is not None and task.kind == "adjudication"
    assert renew_lane_task(task_id=task.pk, user=adjudicator, lease_token=task.lease_token)
    # Queue access alone does not hold an adjudication: can_overturn does.
    adjudicator.user_permissions.remove(Permission.objects.get(codename="can_overturn"))
    demoted = type(adjudicator).objects.get(pk=adjudicator.pk)  # no cached permissions
    with pytest.raises(StaleLease):
        renew_lane_task(task_id=task.pk, user=demoted, lease_token=task.lease_token)


def test_the_heartbeat_needs_the_pages_csrf_token(held, carol):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(carol)
    before = LaneTask.objects.get(pk=held.pk).lease_expires
    _backdate(held, -30)
    refused = strict.post(
        f"/lanes/{held.pk}/renew/", {"lease_token": str(held.lease_token)}, **JSON
    )
    assert refused.status_code == 403
    assert LaneTask.objects.get(pk=held.pk).lease_expires < before


@pytest.mark.django_db(transaction=True)
def test_a_renew_behind_a_finish_holding_the_task_waits_no_longer_than_the_lock_timeout(
    held, carol, settings
):
    import psycopg
    from django.db import OperationalError, transaction

    from tests.blocking import Session

    settings.REVIEW_LOCK_TIMEOUT_MS = 200
    with transaction.atomic():
        # A confirmation on this connection holds the task's row (LOCK_LANE_TASK's FOR UPDATE).
        LaneTask.objects.select_for_update().get(pk=held.pk)
        heartbeat = Session(
            lambda: renew_lane_task(task_id=held.pk, user=carol, lease_token=held.lease_token)
        )
        heartbeat.start()
        with pytest.raises(OperationalError) as raised:
            heartbeat.outcome()
    assert isinstance(raised.value.__cause__, psycopg.errors.LockNotAvailable)
