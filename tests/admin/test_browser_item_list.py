"""The review-item list at a laptop's 1366 px: one line per subject, every date whole."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import Page

from queue_app.models import ReviewItem
from tests.conftest import screenshot
from tests.ops.test_dashboard_browser import make_demo_traffic

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Per row: subject cell height and line height, the subject's title, and whether each date
# cell ends inside the visible part of the results box.
MEASURE = """
() => {
  const box = document.querySelector('.results').getBoundingClientRect();
  return [...document.querySelectorAll('#result_list tbody tr')].map(tr => {
    const subject = tr.querySelector('.field-subject_line, .field-subject');
    const line = parseFloat(getComputedStyle(subject).lineHeight);
    const text = subject.querySelector('[title]') || subject.querySelector('a');
    const dates = [...tr.querySelectorAll('.field-created_at, .field-decided_at')];
    return {
      id: tr.querySelector('.field-id').textContent.trim(),
      lines: Math.round(text.getBoundingClientRect().height / line),
      title: text.getAttribute('title'),
      datesWhole: dates.length === 2 && dates.every(
        d => d.getBoundingClientRect().right <= box.right + 0.5 && d.scrollWidth <= d.clientWidth),
    };
  });
}
"""


def test_the_item_list_reads_at_1366_px(page: Page, live_server):
    make_demo_traffic()  # seed_demo's items, many decided: both date columns filled
    ReviewItem.objects.filter(pk=ReviewItem.objects.filter(state="decided").latest("pk").pk).update(
        subject="KYC check — Maria-Fernanda de los Santos Oliveira-Bettencourt (second attempt)"
    )
    client = Client()
    client.force_login(User.objects.get(username="admin"))
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 1366, "height": 900})

    # Decided items first: the widest rows.
    page.goto(f"{live_server.url}/admin/queue_app/reviewitem/?state__exact=decided")
    screenshot(page, "admin-item-list-1366")
    rows = page.evaluate(MEASURE)

    subjects = dict(ReviewItem.objects.values_list("pk", "subject"))
    assert len(rows) == 50
    page.goto(f"{live_server.url}/admin/queue_app/reviewitem/")
    rows += page.evaluate(MEASURE)
    for row in rows:
        assert row["lines"] == 1, row
        assert row["title"] == subjects[int(row["id"])], row  # the whole subject on hover
        assert row["datesWhole"], row
