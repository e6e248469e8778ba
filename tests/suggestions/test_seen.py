"""What a decision records of the suggestion its maker saw, and where nobody may see it."""

from __future__ import annotations

import html

import pytest
from django.core import signing
from django.test import Client

from queue_app.chain import seal_all, verify_chain
from queue_app.models import Decision, ItemEvent, LaneTask, Queue, ReviewItem
from queue_app.services import claim_lane_task, claim_next, submit_decision
from queue_app.services.suggestions import Seen, reveal_suggestion, seen_token
from queue_app.suggestion_words import AUTOMATIC_WORDS, seen_words
from tests.conftest import approve_as_shown, shown_hash, triggers_off
from tests.console.conftest import login
from tests.suggestions.conftest import seen_field, suggested_item

pytestmark = pytest.mark.django_db


def _display(queue: Queue, how: str) -> None:
    Queue.objects.filter(pk=queue.pk).update(suggestion_display=how)


def _form(item: ReviewItem, seen: str, **overrides: str) -> dict[str, str]:
    item.refresh_from_db()
    return {
        "lease_token": str(item.lease_token),
        "evidence_hash": shown_hash(item),
        "queue": str(item.queue_id),
        "verdict": "approve",
        "reason_code": "verified",
        "note": "",
        "suggestion_seen": seen,
        **overrides,
    }


def _open(client: Client, item: ReviewItem) -> str:
    response = client.get(f"/items/{item.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_shown_suggestion_is_recorded_as_shown_when_the_page_showed_it(queue, alice):
    _display(queue, "shown")
    item = suggested_item(queue, "s1")
    claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    page = _open(client, item)
    assert "fraud-score 2026.11" in page
    response = client.post(f"/items/{item.pk}/decide/", _form(item, seen_field(page)))
    assert response.status_code == 302
    decision = Decision.objects.get()
    assert decision.suggestion_view == "shown"
    # When the page was rendered (created_at is the test transaction's start: not compared).
    assert decision.suggestion_shown_at is not None
    assert decision.suggestion_followed is False  # approved; the machine said reject


def test_an_on_request_suggestion_never_revealed_is_recorded_as_not_shown(queue, alice):
    item = suggested_item(queue, "n1")  # on_request is the default
    claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    page = _open(client, item)
    assert "fraud-score" not in page and 'id="suggestion-reveal"' in page
    client.post(
        f"/items/{item.pk}/decide/",
        _form(item, seen_field(page), verdict="reject", reason_code="fraud"),
    )
    decision = Decision.objects.get()
    assert (decision.suggestion_view, decision.suggestion_shown_at) == ("not_shown", None)
    assert decision.suggestion_followed is True


@pytest.mark.parametrize(
    ("chosen", "view"),
    [(None, "revealed_before_choice"), ("approve", "revealed_after_choice")],
)
def test_a_reveal_is_recorded_under_the_lease_and_carried_into_the_decision(
    queue, alice, chosen, view
):
    item = suggested_item(queue, "r1")
    claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    _open(client, item)
    item.refresh_from_db()
    response = client.post(
        f"/items/{item.pk}/suggestion/",
        {"lease_token": str(item.lease_token), "chosen_verdict": chosen or ""},
        headers={"Accept": "application/json"},
    )
    body = response.json()
    assert body["ok"] and body["view"] == view
    assert body["suggestion"]["model"] == {"name": "fraud-score", "version": "2026.11"}
    event = ItemEvent.objects.get(item=item, kind="suggestion_revealed")
    assert event.detail == {
        "lease_token": str(item.lease_token),
        "after_choice": chosen is not None,
        "chosen_verdict": chosen,
    }
    client.post(f"/items/{item.pk}/decide/", _form(item, body["seen"]))
    decision = Decision.objects.get()
    assert decision.suggestion_view == view
    assert decision.suggestion_shown_at == event.at
    assert decision.suggestion_followed is False


def test_asking_again_under_the_same_lease_keeps_the_first_reveal(queue, alice):
    item = suggested_item(queue, "r2")
    leased = claim_next(queue=queue, reviewer=alice)
    first = reveal_suggestion(
        item_id=item.pk, reviewer=alice, lease_token=leased.lease_token, chosen_verdict=None
    )
    again = reveal_suggestion(
        item_id=item.pk, reviewer=alice, lease_token=leased.lease_token, chosen_verdict="reject"
    )
    assert again.seen == first.seen
    assert ItemEvent.objects.filter(item=item, kind="suggestion_revealed").count() == 1


def test_a_reveal_needs_the_lease(queue, alice, bob):
    item = suggested_item(queue, "r3")
    leased = claim_next(queue=queue, reviewer=alice)
    response = login(bob).post(
        f"/items/{item.pk}/suggestion/",
        {"lease_token": str(leased.lease_token)},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 409
    assert not ItemEvent.objects.filter(kind="suggestion_revealed").exists()


def test_a_reveal_is_refused_where_the_queue_shows_or_hides_it(queue, alice):
    _display(queue, "hidden")
    item = suggested_item(queue, "h0")
    leased = claim_next(queue=queue, reviewer=alice)
    response = login(alice).post(
        f"/items/{item.pk}/suggestion/",
        {"lease_token": str(leased.lease_token)},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 409
    assert not ItemEvent.objects.filter(kind="suggestion_revealed").exists()


def test_a_hidden_suggestion_is_not_on_the_page_and_recorded_as_not_shown(queue, alice):
    _display(queue, "hidden")
    item = suggested_item(queue, "h1")
    claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    page = _open(client, item)
    assert 'id="suggestion"' not in page and "fraud-score" not in page
    client.post(f"/items/{item.pk}/decide/", _form(item, seen_field(page)))
    decision = Decision.objects.get()
    assert (decision.suggestion_view, decision.suggestion_shown_at) == ("not_shown", None)


@pytest.mark.parametrize("how", ["tampered", "other_item", "other_lease", "garbage"])
def test_a_forged_or_foreign_seen_record_is_refused_and_nothing_recorded(queue, alice, how):
    item = suggested_item(queue, "f1")
    other = suggested_item(queue, "f2")
    claim_next(queue=queue, reviewer=alice)
    item.refresh_from_db()
    shown = Seen("shown", item.created_at)
    tokens = {
        "tampered": seen_token(item_id=item.pk, lease_token=item.lease_token, seen=shown)[:-2]
        + "xx",
        "other_item": seen_token(item_id=other.pk, lease_token=item.lease_token, seen=shown),
        "other_lease": seen_token(
            item_id=item.pk, lease_token="00000000-0000-4000-8000-000000000000", seen=shown
        ),
        "garbage": signing.dumps({"item": item.pk}, salt="elsewhere"),
    }
    response = login(alice).post(f"/items/{item.pk}/decide/", _form(item, tokens[how]))
    assert response.status_code == 400
    assert "record of the machine suggestion" in html.unescape(response.content.decode())
    assert not Decision.objects.exists()
    assert ReviewItem.objects.get(pk=item.pk).state == "leased"


def test_the_api_decide_records_shown_as_of_the_decide(api, queue, robot_client):
    item = suggested_item(queue, "a1")
    lease = api.post("/queues/kyc/leases", {"batch_size": 1, "lease_seconds": 60})
    [leased] = lease.body["items"]
    assert leased["suggestion"]["verdict"] == "reject"
    reply = api.post(
        f"/items/{item.pk}/decision",
        {
            "lease_token": leased["lease_token"],
            "verdict": "reject",
            "reason_code": "fraud",
            "evidence_hash": leased["evidence_hash"],
        },
    )
    assert reply.status == 201, reply.body
    assert reply.body["suggestion_view"] == "shown"
    assert reply.body["suggestion_followed"] is True
    assert reply.body["suggestion_shown_at"] is not None
    decision = Decision.objects.get()
    assert decision.suggestion_view == "shown" and decision.suggestion_followed is True


def test_an_item_without_a_suggestion_records_nothing_of_one(queue, alice):
    from tests.conftest import make_items

    make_items(queue, 1)
    leased = claim_next(queue=queue, reviewer=alice)
    decision = submit_decision(
        item_id=leased.pk,
        reviewer=alice,
        lease_token=leased.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(leased),
        suggestion_view="shown",
        suggestion_shown_at=leased.created_at,
    )
    decision.refresh_from_db()
    assert (decision.suggestion_view, decision.suggestion_shown_at) == (None, None)
    assert decision.suggestion_followed is None


def test_blind_qa_never_shows_the_suggestion(queue, alice, bob):
    Queue.objects.filter(pk=queue.pk).update(suggestion_display="shown", qa_rate=100)
    item = suggested_item(queue, "q1")
    leased = claim_next(queue=queue, reviewer=alice)
    approve_as_shown(leased, alice)
    task = claim_lane_task(queue=Queue.objects.get(pk=queue.pk), kind="qa", user=bob)
    assert task is not None and LaneTask.objects.get(pk=task.pk).item_id == item.pk
    client = login(bob)
    lane = client.get(f"/lanes/{task.pk}/").content.decode()
    assert "fraud-score" not in lane and "Machine suggestion" not in lane
    assert "Suggestion:" not in lane
    # Nor the item's own page, while bob's QA review of it is open.
    page = _open(client, item)
    assert "fraud-score" not in page and 'id="suggestion"' not in page


def test_every_surface_names_what_was_seen(queue, alice, bob):
    _display(queue, "shown")
    item = suggested_item(queue, "w1")
    claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    page = _open(client, item)
    client.post(f"/items/{item.pk}/decide/", _form(item, seen_field(page)))
    decision = Decision.objects.get()
    words = seen_words(decision.suggestion_view, decision.suggestion_followed)
    assert words == "Shown with the evidence; not followed"
    assert words in html.unescape(login(bob).get(f"/items/{item.pk}/").content.decode())
    mine = client.get(f"/my-work/?item={item.pk}").content.decode()
    assert words in html.unescape(mine)
    assert seen_words("automatic", True) == AUTOMATIC_WORDS == "Automatic (machine)"


# -- the log's tamper evidence ------------------------------------------------------------------


def _decide_with(queue, alice, key: str, view: str) -> Decision:
    item = suggested_item(queue, key)
    leased = claim_next(queue=queue, reviewer=alice)
    return submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=leased.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(leased),
        suggestion_view=view,
        suggestion_shown_at=leased.created_at if view != "not_shown" else None,
    )


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("suggestion_view", "'revealed_after_choice'"),
        ("suggestion_shown_at", "suggestion_shown_at + interval '1 second'"),
        ("suggestion_followed", "NOT suggestion_followed"),
    ],
)
def test_the_chain_covers_the_suggestion_columns(queue, alice, column, value):
    first = _decide_with(queue, alice, "c1", "shown")
    second = _decide_with(queue, alice, "c2", "revealed_before_choice")
    seal_all()
    assert verify_chain().ok
    with triggers_off("queue_app_decision") as cursor:
        # Only the one column: the others as they were, the constraints still holding.
        cursor.execute(
            f"UPDATE queue_app_decision SET {column} = {value} WHERE id = %s", [second.pk]
        )
    result = verify_chain()
    assert not result.ok
    assert result.first_broken_id == second.pk
    assert first.pk != second.pk


def test_a_decision_on_an_item_with_a_suggestion_is_a_v3_link(queue, alice):
    from django.db import connection

    decision = _decide_with(queue, alice, "c3", "shown")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT queue_app_decision_chain_input(d) FROM queue_app_decision AS d WHERE id = %s",
            [decision.pk],
        )
        (text,) = cursor.fetchone()
    assert text.startswith("v3|")
    assert text.split("|")[-3:-2] == ["shown"] and text.endswith("|true")
