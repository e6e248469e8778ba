"""One rule for every time a person or client gives: an offset PostgreSQL reads, a year in range.

A deadline lies in [2000-01-01, 3000-01-01) UTC wherever it comes from (API, services, a hold
pushing it back), and the database checks the same range (item_due_at_in_range).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from queue_app.datetimes import moment_problem
from queue_app.errors import InvalidDeadline, InvalidHoldTime
from queue_app.forms import MomentField
from queue_app.models import ItemEvent, ReviewItem
from queue_app.selectors.deadline_figures import signed_duration
from queue_app.services import claim_next, hold_item
from tests.api.conftest import intake_body
from tests.clocks.helpers import add_hold_reasons, item
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


# -- the rule -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("2030-01-01T00:00:00+15:59", False),
        ("2030-01-01T00:00:00-15:59", False),
        ("2030-01-01T00:00:00+16:00", True),
        ("2030-01-01T00:00:00-16:30", True),
        ("2030-01-01T00:00:00+23:59", True),
        ("2000-01-01T00:00:00Z", False),
        ("1999-12-31T23:59:59Z", True),
        ("2999-12-31T23:59:59Z", False),
        ("3000-01-01T00:00:00Z", True),
        ("0001-01-01T00:00:00Z", True),
        ("9999-12-31T23:59:59-05:00", True),
    ],
)
def test_it_refuses_offsets_postgresql_cannot_read_and_years_out_of_range(text, refused):
    assert (moment_problem(datetime.fromisoformat(text)) is not None) is refused


def test_it_refuses_a_naive_moment():
    assert "time zone" in moment_problem(datetime(2030, 1, 1))


def test_the_form_field_applies_the_rule():
    field = MomentField()
    assert field.clean("2030-01-01T10:00:00+15:00").utcoffset() == timedelta(hours=15)
    with pytest.raises(Exception, match="offset between -15:59 and \\+15:59"):
        field.clean("2030-01-01T10:00:00+16:00")


# -- intake -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "due_at",
    [
        "9999-12-31T23:59:59-05:00",  # past 9999-12-31 in UTC
        "3000-01-01T00:00:00Z",
        "0001-01-01T00:00:00Z",
        "2030-01-01T00:00:00+23:59",  # an offset PostgreSQL refuses
        "2030-01-01T00:00:00-16:00",
    ],
)
def test_it_refuses_a_due_at_outside_the_rule_at_intake_with_a_422(api, queue, due_at):
    reply = api.post("/items", intake_body(due_at=due_at))
    assert reply.status == 422, reply.body
    assert reply.body["error"]["code"] == "invalid"
    assert "due_at" in reply.body["error"]["message"]
    assert not ReviewItem.objects.exists()


def test_it_refuses_a_due_at_out_of_range_given_to_the_service(queue):
    # Any entry, not only the API: seeding, commands, code calling create_item.
    with pytest.raises(InvalidDeadline, match="2000-01-01 and 2999-12-31"):
        item(queue, "far", due_at=datetime(3001, 1, 1, tzinfo=UTC))
    assert not ReviewItem.objects.exists()


def test_the_database_refuses_a_deadline_out_of_range(queue):
    it = item(queue, "k")
    for due_at in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)):
        with pytest.raises(IntegrityError, match="item_due_at_in_range"), transaction.atomic():
            ReviewItem.objects.filter(pk=it.pk).update(due_at=due_at)


# -- holds --------------------------------------------------------------------------------------


def _leased_with_deadline(queue, alice, due_at):
    add_hold_reasons(queue)
    it = item(queue, "k", due_at=due_at)
    return it, claim_next(queue=queue, reviewer=alice)


def test_it_refuses_a_hold_that_would_push_the_deadline_out_of_range(queue, alice):
    it, lease = _leased_with_deadline(queue, alice, datetime(2999, 12, 30, tzinfo=UTC))
    with pytest.raises(InvalidHoldTime, match="deadline past 2999-12-31"):
        hold_item(
            item_id=it.pk,
            reviewer=alice,
            lease_token=lease.lease_token,
            reason_code="awaiting_documents",
            hold_until=timezone.now() + timedelta(days=3),
        )
    assert ReviewItem.objects.get(pk=it.pk).state == "leased"


def test_the_hold_form_says_the_deadline_would_leave_the_range(queue, alice):
    it, lease = _leased_with_deadline(queue, alice, datetime(2999, 12, 30, tzinfo=UTC))
    client = login(alice)
    until = timezone.localtime(timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    response = client.post(
        f"/items/{it.pk}/hold/",
        {
            "lease_token": lease.lease_token,
            "reason_code": "awaiting_documents",
            "hold_until": until,
        },
    )
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode().replace("&#39;", "'")
    assert "Not put on hold: Holding until then would move the item's deadline past" in page
    assert ReviewItem.objects.get(pk=it.pk).state == "leased"
    assert not ItemEvent.objects.filter(item=it, kind="held").exists()


def test_the_hold_form_refuses_a_time_written_with_an_offset(queue, alice):
    it, lease = _leased_with_deadline(queue, alice, None)
    client = login(alice)
    # Three hours from now, written in +16:00.
    zone = timezone.get_fixed_timezone(16 * 60)
    until = (timezone.now() + timedelta(hours=3)).astimezone(zone).strftime("%Y-%m-%dT%H:%M%z")
    until = until[:-2] + ":" + until[-2:]
    response = client.post(
        f"/items/{it.pk}/hold/",
        {
            "lease_token": lease.lease_token,
            "reason_code": "awaiting_documents",
            "hold_until": until,
        },
    )
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    # The form takes a time in its own format only, so an offset is refused as that.
    assert "Not put on hold: Give the resume time as a date and time, YYYY-MM-DD HH:MM" in page
    assert ReviewItem.objects.get(pk=it.pk).state == "leased"


def test_the_api_hold_refuses_an_offset_postgresql_cannot_read(api, queue):
    add_hold_reasons(queue)
    it = item(queue, "k")
    lease = api.post(f"/queues/{queue.slug}/leases", {"batch_size": 1, "lease_seconds": 60})
    [row] = lease.body["items"]
    zone = timezone.get_fixed_timezone(-(16 * 60 + 30))
    until = (timezone.now() + timedelta(hours=3)).astimezone(zone).isoformat()
    reply = api.post(
        f"/items/{it.pk}/hold",
        {
            "lease_token": row["lease_token"],
            "reason_code": "awaiting_documents",
            "hold_until": until,
        },
    )
    assert reply.status == 422, reply.body
    assert "offset" in reply.body["error"]["message"]
    assert ReviewItem.objects.get(pk=it.pk).state == "leased"


# -- /ops/ --------------------------------------------------------------------------------------


def test_ops_says_a_span_of_millennia_without_leaving_the_calendar():
    # A time-to-deadline is a span; the dashboard says it from its seconds.
    assert signed_duration(timedelta(days=-800_000)) == "800000 d late"
    assert signed_duration(timedelta(days=3_000_000)) == "3000000 d left"


def test_a_queue_allowing_holds_of_millennia_still_takes_a_short_hold(queue, alice):
    # The bound is compared as a span: now + max_hold would leave the calendar.
    queue.max_hold = timedelta(days=365 * 9000)
    queue.save(update_fields=["max_hold"])
    it, lease = _leased_with_deadline(queue, alice, None)
    held = hold_item(
        item_id=it.pk,
        reviewer=alice,
        lease_token=lease.lease_token,
        reason_code="awaiting_documents",
        hold_until=timezone.now() + timedelta(days=2),
    )
    assert held["state"] == "held"


def test_the_item_page_offers_a_hold_form_on_a_queue_allowing_millennia(queue, alice):
    queue.max_hold = timedelta(days=365 * 9000)
    queue.save(update_fields=["max_hold"])
    _leased_with_deadline(queue, alice, None)
    [it] = ReviewItem.objects.all()
    page = login(alice).get(f"/items/{it.pk}/")
    assert page.status_code == 200
    assert 'id="hold-form"' in page.content.decode()
