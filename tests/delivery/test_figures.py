"""Statements built, sent and failing, on /ops/ and in /metrics, as the rows say."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from queue_app import delivery
from tests.delivery.conftest import built
from tests.ops.test_metrics import scrape, value

pytestmark = pytest.mark.django_db


@pytest.fixture
def four_statements(notifying_posts, platform, standin, alice):
    """One sent, one refused by the contract, one with a dead notice, one waiting."""
    sent, dead, waiting = built(notifying_posts, alice, 3)
    built(notifying_posts, alice, reason="document_expired")
    platform.replies = [200, 400, 503]
    assert delivery.deliver_notices() == 3
    assert delivery.submit_statements() == 3
    assert [s.deliveries.get(channel="notice").status for s in (sent, dead, waiting)] == [
        "done",
        "dead",
        "waiting",
    ]
    return notifying_posts


def test_the_dashboard_counts_them(client, four_statements):
    operator = User.objects.create_user("olga", password="pw-olga", is_staff=True)
    client.force_login(operator)
    page = client.get("/ops/").content.decode()
    row = re.search(
        r'<tr data-queue="posts">(.*?)</tr>', page.split('id="statement-figures"')[1], re.S
    )
    assert row is not None
    figures = dict(re.findall(r'data-figure="(\w+)">(\d+)<', row.group(1)))
    assert figures == {"built": "4", "sent": "1", "refused": "1", "dead": "1", "waiting": "1"}


def test_the_metrics_count_them(client, four_statements):
    samples = scrape(client)
    assert value(samples, "statements_built", queue="posts") == 4
    assert value(samples, "statements_sent", queue="posts") == 1
    assert value(samples, "statements_failing", queue="posts", why="refused") == 1
    assert value(samples, "statements_failing", queue="posts", why="dead") == 1
    assert value(samples, "statements_failing", queue="posts", why="waiting") == 1


def test_a_statement_is_sent_only_when_the_database_has_it_too(
    notifying_posts, platform, standin, alice, client
):
    built(notifying_posts, alice)
    delivery.deliver_notices()
    samples = scrape(client)
    assert value(samples, "statements_sent", queue="posts") == 0
    assert value(samples, "statements_failing", queue="posts", why="waiting") == 1
    delivery.submit_statements()
    samples = scrape(client)
    assert value(samples, "statements_sent", queue="posts") == 1
