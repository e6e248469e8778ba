"""The hold form's time: text in the console's one format (YYYY-MM-DD HH:MM), shown on the form."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from queue_app.models import ReviewItem
from queue_app.services import claim_next
from tests.clocks.helpers import add_hold_reasons, item
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def leased(alice, queue) -> ReviewItem:
    add_hold_reasons(queue)
    item(queue, "k")
    found = claim_next(queue=queue, reviewer=alice)
    assert found is not None
    return found


def _hold(client, leased: ReviewItem, hold_until: str):
    """Post the hold form; return the message the page shows after the redirect."""
    response = client.post(
        f"/items/{leased.pk}/hold/",
        {
            "lease_token": str(leased.lease_token),
            "reason_code": "awaiting_documents",
            "hold_until": hold_until,
        },
    )
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode().replace("&#x27;", "'")
    return re.search(r'<ul class="messagelist[^"]*"[^>]*>(.*?)</ul>', page, re.S).group(1)


def _in_three_hours(fmt: str) -> str:
    return timezone.localtime(timezone.now() + timedelta(hours=3)).strftime(fmt)


def test_the_form_is_a_text_input_that_shows_the_format_and_a_default_in_it(alice, leased):
    html = login(alice).get(f"/items/{leased.pk}/").content.decode()
    field = re.search(r'<input type="text" id="id_hold_until"[^>]*>', html)
    assert field is not None, "the hold time is a text input, not the browser's picker"
    default = re.search(r'value="([^"]*)"', field.group(0)).group(1)
    datetime.strptime(default, "%Y-%m-%d %H:%M")  # the default is written in the format
    assert 'Back on <span class="hold-format">(YYYY-MM-DD HH:MM)</span>' in html
    assert "datetime-local" not in html


def test_a_time_in_the_format_puts_the_item_on_hold_until_then(alice, leased):
    typed = _in_three_hours("%Y-%m-%d %H:%M")
    message = _hold(login(alice), leased, typed)
    assert f"is on hold until {typed}" in message
    held = ReviewItem.objects.get(pk=leased.pk)
    assert held.state == "held"
    assert timezone.localtime(held.hold_until).strftime("%Y-%m-%d %H:%M") == typed


def test_the_pickers_format_from_a_page_opened_before_still_holds(alice, leased):
    message = _hold(login(alice), leased, _in_three_hours("%Y-%m-%dT%H:%M"))
    assert "is on hold until" in message
    assert ReviewItem.objects.get(pk=leased.pk).state == "held"


@pytest.mark.parametrize(
    "typed",
    ["12/07/2026 09:30", "2026-12-07", "2026-12-07 09:30+05:00", "tomorrow", "2026-13-01 09:30"],
)
def test_any_other_format_is_refused_with_the_format_named(alice, leased, typed):
    message = _hold(login(alice), leased, typed)
    assert "Not put on hold: Give the resume time as a date and time, YYYY-MM-DD HH:MM" in message
    assert ReviewItem.objects.get(pk=leased.pk).state == "leased"
