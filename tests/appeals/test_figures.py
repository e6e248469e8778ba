"""Appeals on /ops/ and in /metrics, against counts made by hand from the rows."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from queue_app.second_person import wilson_interval
from queue_app.services import appeals, claim_lane_task
from tests.appeals.conftest import file, restricted
from tests.conftest import triggers_off
from tests.ops.test_metrics import scrape, value

pytestmark = pytest.mark.django_db


def _decide(appeal, user, *, reverse: bool) -> None:
    task = claim_lane_task(queue=appeal.queue, kind="appeal", user=user)
    assert task.pk == appeal.task_id
    appeals.decide_appeal(
        task_id=task.pk,
        user=user,
        lease_token=task.lease_token,
        reverse=reverse,
        corrected_verdict="approve" if reverse else "",
        reason_code="reviewer_error" if reverse else "",
        reasons="Reviewed again.",
    )


@pytest.fixture
def four_appeals(posts, alice, dave, forwarder):
    """One upheld after an hour, one reversed after three, one waiting, one waiting too long."""
    client = forwarder[0]
    upheld, reversed_, _waiting = (
        file(client, restricted(posts, alice), reference=f"c-{i}") for i in range(3)
    )
    _decide(upheld, dave, reverse=False)
    _decide(reversed_, dave, reverse=True)
    late = file(client, restricted(posts, alice), reference="c-late")
    with triggers_off("queue_app_appeal") as cursor:  # it came two days ago, due yesterday
        cursor.execute(
            "UPDATE queue_app_appeal SET received_at = now() - interval '2 days', "
            "due_at = now() - interval '1 day' WHERE id = %s",
            [late.pk],
        )
    with triggers_off("queue_app_laneoutcome") as cursor:
        for appeal, hours in ((upheld, 1), (reversed_, 3)):
            cursor.execute(
                "UPDATE queue_app_laneoutcome SET created_at = %s WHERE task_id = %s",
                [appeal.received_at + timedelta(hours=hours), appeal.task_id],
            )
    return posts


def test_the_metrics_count_them(client, four_appeals):
    samples = scrape(client)
    assert value(samples, "appeals_received", queue="posts") == 4
    assert value(samples, "appeals_pending", queue="posts") == 2
    assert value(samples, "appeals_past_deadline", queue="posts") == 1
    assert value(samples, "appeals_decided", queue="posts") == 2
    assert value(samples, "appeals_reversed", queue="posts") == 1
    low, high = wilson_interval(1, 2)
    assert value(samples, "appeals_reversed_share", queue="posts", bound="value") == 0.5
    assert value(samples, "appeals_reversed_share", queue="posts", bound="low") == low
    assert value(samples, "appeals_reversed_share", queue="posts", bound="high") == high
    # The median of one hour and three hours.
    assert value(samples, "appeals_median_seconds_to_decide", queue="posts") == 2 * 3600


def test_the_dashboard_shows_them(client, four_appeals):
    client.force_login(User.objects.create_user("olga", password="pw-olga", is_staff=True))
    page = client.get("/ops/").content.decode()
    row = re.search(
        r'<tr data-queue="posts">(.*?)</tr>', page.split('id="appeal-figures"')[1], re.S
    )
    assert row is not None
    figures = dict(re.findall(r'data-figure="(\w+)">([^<]*)<', row.group(1)))
    low, high = wilson_interval(1, 2)
    assert figures == {
        "received": "4",
        "pending": "2",
        "past_deadline": "1",
        "decided": "2",
        "reversed": f"1 of 2 (50%, 95% CI {low:.0%}\u2013{high:.0%})".replace("%", "\u00a0%"),
        "median": "2 h 0 min",
        "notices_dead": "0",
        "reversals_returned": "0",
    }
