"""GET /: my queues, their backlog, my live leases, and a Next item button each."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from queue_app.services import claim_next
from tests.conftest import backdate_lease, make_items, make_queue
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


def row(html: str, slug: str) -> str:
    match = re.search(rf'<tr data-queue="{slug}">(.*?)</tr>', html, re.S)
    assert match, f"no row for {slug}"
    return match.group(1)


def test_it_lists_my_queues_with_pending_counts(alice_client: Client, queue):
    make_items(queue, 3)
    html = alice_client.get("/").content.decode()
    kyc = row(html, "kyc")
    assert '<td class="num pending-count">3</td>' in kyc
    assert "under a minute" in kyc  # age of the oldest pending item, never "0 minutes"
    assert 'action="/queues/kyc/next/"' in kyc
    assert '<td class="num pending-count">0</td>' in row(html, "escalation")


def test_it_hides_queues_i_cannot_review(alice_client: Client, queue):
    make_queue("secret")
    html = alice_client.get("/").content.decode()
    assert 'data-queue="kyc"' in html
    assert "secret" not in html.lower()


def test_it_tells_a_user_without_queues_what_to_do(outsider_client: Client, queue):
    response = outsider_client.get("/")
    assert response.status_code == 200
    assert b"You do not review any queue yet" in response.content
    assert b"data-queue" not in response.content


def test_a_superuser_sees_every_queue(db, queue):
    make_queue("secret")
    admin = User.objects.create_superuser("root", password="x")
    html = login(admin).get("/").content.decode()
    assert 'data-queue="secret"' in html
    assert 'data-queue="kyc"' in html


def test_it_lists_my_live_leases_with_a_link_to_resume(alice_client: Client, alice, bob, queue):
    mine, theirs, lapsed = make_items(queue, 3)
    assert claim_next(queue=queue, reviewer=alice).pk == mine.pk
    assert claim_next(queue=queue, reviewer=bob).pk == theirs.pk
    html = alice_client.get("/").content.decode()
    assert f'href="/items/{mine.pk}/">Resume #{mine.pk}' in html
    assert f"#{theirs.pk}" not in html

    backdate_lease(mine.pk)
    html = alice_client.get("/").content.decode()
    assert "Resume #" not in html
    assert lapsed.pk  # still pending, counted below
    assert '<td class="num pending-count">1</td>' in row(html, "kyc")


def test_its_query_count_does_not_grow_with_queues_or_items(
    alice, alice_client, queue, reviewers_group
):
    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert alice_client.get("/").status_code == 200
        return len(ctx.captured_queries)

    make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    before = queries()
    for slug in ("q1", "q2", "q3"):
        extra = make_queue(slug, group=reviewers_group)
        make_items(extra, 3)
        claim_next(queue=extra, reviewer=alice)
    # Each column is one grouped statement over every queue, so more queues read no more.
    assert queries() == before


def test_an_empty_queue_offers_no_next_item_and_no_wait(alice_client: Client, queue):
    make_items(queue, 1)
    html = alice_client.get("/").content.decode()

    empty = row(html, "escalation")
    assert 'action="/queues/escalation/next/"' not in empty
    assert re.search(r"<button[^>]*disabled[^>]*>Nothing waiting</button>", empty)
    assert re.search(r'<td class="oldest-waiting"><span[^>]*>&mdash;</span></td>', empty)
    assert "minute" not in empty
    assert 'action="/queues/kyc/next/"' in row(html, "kyc")


def test_an_expired_lease_is_work_waiting(alice_client: Client, bob, queue):
    make_items(queue, 1)
    taken = claim_next(queue=queue, reviewer=bob)
    assert "Nothing waiting" in row(alice_client.get("/").content.decode(), "kyc")

    backdate_lease(taken.pk)  # bob walked away: Next item would hand it to alice
    kyc = row(alice_client.get("/").content.decode(), "kyc")

    assert '<td class="num pending-count">0</td>' in kyc
    assert 'action="/queues/kyc/next/"' in kyc
    assert "Nothing waiting" not in kyc


def test_my_own_lease_keeps_next_item_on_offer(alice_client: Client, alice, queue):
    make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)

    kyc = row(alice_client.get("/").content.decode(), "kyc")

    assert 'action="/queues/kyc/next/"' in kyc
