"""GET /items/<id>/: evidence, history, lease countdown, and the form only for the holder."""

from __future__ import annotations

import re
from decimal import Decimal

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from queue_app.models import ReviewItem
from queue_app.services import claim_next, create_item, overturn_decision, submit_decision
from tests.conftest import make_items, make_queue, shown_hash
from tests.console.conftest import recon_item

pytestmark = pytest.mark.django_db


def hidden(html: str, name: str) -> str:
    match = re.search(rf'<input type="hidden" name="{name}" value="([^"]*)"', html)
    assert match, f"no hidden {name}"
    return match.group(1)


def test_the_holder_gets_the_form_with_token_and_evidence_hash(alice_client, alice, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    item.refresh_from_db()
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    assert hidden(html, "lease_token") == str(item.lease_token)
    assert hidden(html, "evidence_hash") == shown_hash(item)
    assert 'id="lease-countdown"' in html
    assert f'data-renew-url="/items/{item.pk}/renew/"' in html
    # The token appears in hidden inputs only, never in a link or form action.
    assert html.count(str(item.lease_token)) == 2
    assert not re.search(rf'(href|action)="[^"]*{item.lease_token}', html)


def test_the_form_offers_each_verdict_with_its_own_reasons(alice_client, alice, queue):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    for verdict in ("approve", "reject", "escalate"):
        assert f'name="verdict" value="{verdict}"' in html
    assert re.search(r'<option value="fraud" data-verdict="reject"', html)
    assert 'value="reviewer_error"' not in html  # overturn reasons are for admins only


def test_it_offers_no_escalate_where_there_is_nowhere_to_escalate(
    alice_client, alice, reviewers_group
):
    flat = make_queue("flat", group=reviewers_group)
    make_items(flat, 1)
    item = claim_next(queue=flat, reviewer=alice)
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    assert 'value="escalate"' not in html
    assert 'value="approve"' in html


def test_an_item_under_someone_elses_live_lease_is_read_only(alice_client, bob, queue):
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=bob)
    item.refresh_from_db()
    response = alice_client.get(f"/items/{item.pk}/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "bob is reviewing this item" in html
    assert 'id="decision-form"' not in html
    assert 'id="release-form"' not in html
    assert str(item.lease_token) not in html
    assert "item 0" in html  # the evidence is still readable


def test_a_pending_item_is_read_only_with_a_next_button(alice_client, queue):
    (item,) = make_items(queue, 1)
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    assert 'id="decision-form"' not in html
    assert 'id="next-form"' in html


def _decided(queue, reviewer, *, verdict: str, reason_code: str, note: str) -> ReviewItem:
    """A new item of the queue, claimed and decided by the reviewer as shown."""
    (item,) = make_items(queue, 1)
    claimed = claim_next(queue=queue, reviewer=reviewer)
    submit_decision(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=claimed.lease_token,
        verdict=verdict,
        reason_code=reason_code,
        evidence_hash=shown_hash(item),
        note=note,
    )
    return item


def test_a_decided_item_shows_its_decisions(alice_client, alice, queue):
    item = _decided(
        queue, alice, verdict="reject", reason_code="fraud", note="Second <b>passport</b> on file"
    )
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    assert "Decided on" in html
    # The verdict in the timeline, and what became of it (the item's one story,
    # queue_app/models/story.py).
    timeline = html.split('id="timeline-title"')[1]
    assert '<span class="rc-badge rc-badge--danger">Reject</span>' in timeline
    assert '<p class="quiet decision-status status-pending">effect pending</p>' in timeline
    assert "Second &lt;b&gt;passport&lt;/b&gt; on file" in html
    assert 'id="decision-form"' not in html


def test_earlier_decisions_name_the_reviewer_as_they_were_when_deciding(alice_client, alice, queue):
    (item,) = make_items(queue, 1)
    claimed = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
    )
    alice.username = "alice.renamed"
    alice.save()
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    # The decision's entry in the timeline (events name a person as they are named now).
    entry = html.split('class="rc-timeline__event timeline-decision')[1].split("</li>")[0]
    assert '<span class="timeline-actor">alice</span>' in entry
    assert "alice.renamed" not in entry


def test_a_decision_from_before_names_were_recorded_shows_its_reviewers_name_today(
    alice_client, bob, queue
):
    # A row written before names were recorded has no reviewer_username: the page names the
    # reviewer from the users table, in the decisions' own statement (items_sql.ITEM_DECISIONS).
    from tests.test_database_rules import insert_unnamed_decision

    (item,) = make_items(queue, 1)
    ReviewItem.objects.filter(pk=item.pk).update(state="decided", decided_at=timezone.now())
    insert_unnamed_decision(item, bob)
    bob.username = "bob.today"
    bob.save()
    with CaptureQueriesContext(connection) as ctx:
        html = alice_client.get(f"/items/{item.pk}/").content.decode()
    assert '<span class="timeline-actor">bob.today</span>' in html.split('id="timeline-title"')[1]
    # Nothing was read lazily for it: the name came with the decision. (The one read of a
    # whole user row is the signed-in reviewer's, with the session.)
    whole_user_rows = [
        q["sql"] or ""
        for q in ctx.captured_queries
        if "auth_user" in (q["sql"] or "") and "password" in (q["sql"] or "")
    ]
    assert len(whole_user_rows) <= 1
    assert all("FROM queue_app_session" in q for q in whole_user_rows)


def test_items_of_queues_i_lack_are_not_found(outsider_client, queue):
    (item,) = make_items(queue, 1)
    response = outsider_client.get(f"/items/{item.pk}/")
    assert response.status_code == 404
    assert b"no such item, or it belongs to a queue you do not have access to" in response.content
    assert b"item 0" not in response.content


def test_an_unknown_item_is_not_found_with_the_same_words(alice_client, queue):
    response = alice_client.get("/items/999999/")
    assert response.status_code == 404
    assert b"no such item" in response.content


def test_reconciliation_amounts_are_exact_and_grouped(alice_client, alice, recon_queue):
    item = recon_item(recon_queue)
    claim_next(queue=recon_queue, reviewer=alice)
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    assert '<span class="amount">+12,345,678,901,234.57</span>' in html
    assert '<span class="amount">0.10</span>' in html
    assert '<span class="amount">\u22121,000.5</span>' in html
    assert "ACME-CORP" in html
    assert "match-partial" in html
    # What the hash covers is exactly the row that was rendered, decimals and all.
    assert hidden(html, "evidence_hash") == shown_hash(ReviewItem.objects.get(pk=item.pk))


def test_unknown_shapes_render_as_legible_escaped_key_values(alice_client, alice, queue):
    create_item(
        queue=queue,
        subject="Odd <shape>",
        payload={
            "customer_profile": {"tier": "gold", "tags": ["vip", "legacy"], "limits": {}},
            "free_text": "x" * 3000,
            "attack": "<script>alert(1)</script>",
            "score": Decimal("1234567.891"),
            "flag": True,
            "missing": None,
        },
        idempotency_key="odd",
    )
    item = claim_next(queue=queue, reviewer=alice)
    html = alice_client.get(f"/items/{item.pk}/").content.decode()
    assert '<dt title="customer_profile">Customer profile</dt>' in html
    assert '<ol class="ev-list"><li><span class="ev-text">vip</span></li>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    assert "Odd &lt;shape&gt;" in html
    assert '<span class="ev-number">1,234,567.891</span>' in html
    assert '<span class="ev-bool">Yes</span>' in html
    assert '<span class="ev-text">' + "x" * 3000 + "</span>" in html


def test_its_query_count_does_not_grow_with_history(alice_client, alice, bob, supervisor, queue):
    def queries(item_id: int) -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert alice_client.get(f"/items/{item_id}/").status_code == 200
        return len(ctx.captured_queries)

    plain, busy = make_items(queue, 2)
    for item in (plain, busy):
        claimed = claim_next(queue=queue, reviewer=bob)
        submit_decision(
            item_id=claimed.pk,
            reviewer=bob,
            lease_token=claimed.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(item),
        )
    overturn_decision(
        decision_id=busy.decisions.get().pk,
        admin=supervisor,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    assert queries(busy.pk) == queries(plain.pk)

    make_items(queue, 1, prefix="live")
    held = claim_next(queue=queue, reviewer=alice)
    # The session with its user; then the item with its queue and whether I may review it
    # (items_sql.ITEM_WITH_QUEUE_AND_ACCESS), earlier decisions with their pre-0007 authors' names,
    # the reason codes, evidence rules, the hold form's reasons, the lease holder's name and
    # the checkers' returns, the timeline's page and who else touched the item (one round trip,
    # services/item_page.read_item_page).
    assert queries(held.pk) == 10


def test_the_item_page_is_two_round_trips(alice_client, alice, bob, queue, monkeypatch):
    from tests.test_round_trips import _round_trips

    mine, theirs = make_items(queue, 2)
    claim_next(queue=queue, reviewer=alice)
    claim_next(queue=queue, reviewer=bob)
    for item in (mine, theirs):
        alice_client.get(f"/items/{item.pk}/")  # anything a first request does once
    # A round trip is a statement run on its own, or a pipeline's Sync.
    syncs = _round_trips(monkeypatch)
    alone: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(cursor, query, *args, **kwargs):
        if cursor.connection._pipeline is None:
            alone.append(str(query)[:60])
        return execute(cursor, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)

    def round_trips() -> int:
        return len(alone) + sum(1 for trip in syncs if trip and trip[-1] == b"Sync")

    page = alice_client.get(f"/items/{mine.pk}/")
    assert 'id="decision-form"' in page.content.decode()
    # One for the session with its user, one for the item with everything its page shows.
    assert round_trips() == 2, (alone, syncs)
    alone.clear()
    syncs[:] = [[]]
    page = alice_client.get(f"/items/{theirs.pk}/").content.decode()
    assert "bob is reviewing this item" in page
    assert round_trips() == 2, (alone, syncs)


def test_another_queues_item_is_not_found_though_its_rows_came_with_it(
    outsider_client, alice, queue
):
    # read_item_page reads the item's rows with the item; the 404 is decided from the item,
    # and nothing of the rest reaches the page.
    item = _decided(
        queue,
        alice,
        verdict="approve",
        reason_code="verified",
        note="a note only the queue's reviewers may read",
    )
    response = outsider_client.get(f"/items/{item.pk}/")
    assert response.status_code == 404
    assert b"a note only the queue" not in response.content
    assert b"verified" not in response.content


def test_items_of_queues_granted_to_my_api_client_are_shown(queue, client):
    # The item's read carries the access rule (items_sql.ITEM_WITH_QUEUE_AND_ACCESS): a
    # queue granted through an API client counts, and stops counting when it is revoked.
    from queue_app.api.auth import issue_api_client, revoke_api_client

    (item,) = make_items(queue, 1)
    api_client, _token = issue_api_client(name="scorer", can_adjudicate=True, queues=[queue])
    client.force_login(api_client.user)
    assert client.get(f"/items/{item.pk}/").status_code == 200
    revoke_api_client(client=api_client)
    assert client.get(f"/items/{item.pk}/").status_code == 404


def test_the_items_one_read_brings_the_whole_item_and_its_whole_queue(queue, alice, outsider):
    (item,) = make_items(queue, 1)
    found = ReviewItem.objects.with_queue_and_access(item_id=item.pk, user_id=alice.pk)
    # Every column of both, none left to load later (the queue's are listed from its model).
    assert found.get_deferred_fields() == set()
    assert found.queue.get_deferred_fields() == set()
    assert (found.pk, found.queue.pk, found.queue.slug) == (item.pk, queue.pk, queue.slug)
    assert found.queue.lease_ttl == queue.lease_ttl
    assert found.may_review is True
    assert (
        ReviewItem.objects.with_queue_and_access(item_id=item.pk, user_id=outsider.pk).may_review
        is False
    )
    assert (
        ReviewItem.objects.with_queue_and_access(item_id=item.pk + 1000, user_id=alice.pk) is None
    )
