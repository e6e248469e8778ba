"""The item page: exact evidence, the full timeline, search and filters, a cheap changelist;
the decision list's search."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from queue_app.apply import apply_one
from queue_app.models import ReviewItem
from queue_app.services import (
    claim_next,
    create_item,
    escalate_abandoned,
    overturn_decision,
    release_lease,
)
from tests.admin.conftest import client_for, decide
from tests.conftest import backdate_lease, make_items

pytestmark = pytest.mark.django_db


def _item_page(client, item_id: int) -> str:
    response = client.get(reverse("admin:queue_app_reviewitem_change", args=[item_id]))
    assert response.status_code == 200
    return response.content.decode()


def _titles(user, item_id: int) -> list[str]:
    response = client_for(user).get(reverse("admin:queue_app_reviewitem_change", args=[item_id]))
    return [entry.title for entry in response.context["timeline"].entries]


# Real commits: each step stamps its own time, as in production (one test transaction would
# give every SQL-written row the same now()).
@pytest.mark.django_db(transaction=True)
def test_the_timeline_tells_the_whole_story(queue, alice, bob, compliance):
    (item,) = make_items(queue, 1, prefix="Applicant")
    first = claim_next(queue=queue, reviewer=alice)
    release_lease(item_id=item.pk, reviewer=alice, lease_token=first.lease_token)
    claim_next(queue=queue, reviewer=bob)
    backdate_lease(item.pk)  # bob walked away; alice picks it up after expiry
    approved = decide(ReviewItem.objects.get(pk=item.pk), alice)
    assert apply_one()  # the worker carries the approval out
    overturn = overturn_decision(
        decision_id=approved.pk,
        admin=compliance,
        corrected_verdict="reject",
        reason_code="reviewer_error",
        note="Expired passport",
    )
    story = [
        "Created",
        "Claimed",
        "Released",
        "Claimed",
        "Re-claimed after expiry",
        f"Decision #{approved.pk}: approve (overturned)",
        f"Decision #{approved.pk} applied",
        f"Overturn #{overturn.pk} of decision #{approved.pk}: now reject",
    ]
    assert _titles(compliance, item.pk) == [
        *story,
        f"Decision #{overturn.pk} waiting for the apply worker",
    ]

    assert apply_one()  # and then the overturn
    assert _titles(compliance, item.pk) == [*story, f"Decision #{overturn.pk} applied"]
    page = _item_page(client_for(compliance), item.pk)
    assert "— alice" in page and "— bob" in page and "Casey Moreau (casey)" in page
    assert "Standing outcome: <strong>reject</strong>" in page
    assert "Note: Expired passport" in page


@pytest.mark.django_db(transaction=True)
def test_the_timeline_says_a_decision_overturned_before_its_effect_ran_was_not_run(
    queue, alice, compliance
):
    (item,) = make_items(queue, 1)
    approved = decide(ReviewItem.objects.get(pk=item.pk), alice)
    overturn = overturn_decision(
        decision_id=approved.pk,
        admin=compliance,
        corrected_verdict="reject",
        reason_code="reviewer_error",
        note="Expired passport",
    )

    assert apply_one() and apply_one()

    titles = _titles(compliance, item.pk)
    assert f"Decision #{approved.pk} superseded before its turn: effect not run" in titles
    assert titles[-1] == f"Decision #{overturn.pk} applied"


def test_the_timeline_shows_auto_escalation_with_queue_names(queue, alice, compliance):
    queue.escalation_threshold = 1
    queue.save()
    (item,) = make_items(queue, 1)
    claim_next(queue=queue, reviewer=alice)
    backdate_lease(item.pk)
    assert escalate_abandoned() == 1
    page = _item_page(client_for(compliance), item.pk)
    assert "Auto-escalated" in page
    assert "Moved from Kyc to Escalation after 1 lease without a decision." in page
    assert "Standing outcome: <strong>not decided yet</strong>" in page


def test_evidence_is_shown_digit_for_digit(queue, compliance):
    item, _ = create_item(
        queue=queue,
        subject="ACME statement BR123456",
        payload={"variance_amount": Decimal("12345678901234.57"), "ledger": Decimal("0.10")},
        idempotency_key="recon-1",
    )
    page = _item_page(client_for(compliance), item.pk)
    assert "&quot;variance_amount&quot;: 12345678901234.57" in page
    assert "&quot;ledger&quot;: 0.10" in page


def test_it_finds_items_by_subject_idempotency_key_and_trace_id(queue, compliance):
    items = make_items(queue, 3, prefix="Applicant")
    client = client_for(compliance)
    url = reverse("admin:queue_app_reviewitem_changelist")

    def found(term: str) -> set[int]:
        return {obj.pk for obj in client.get(url, {"q": term}).context["cl"].result_list}

    assert found("applicant 1") == {items[1].pk}
    assert found("kyc-Applicant-2") == {items[2].pk}
    assert found(str(items[0].trace_id)) == {items[0].pk}
    assert found("nobody") == set()


def test_the_item_search_finds_subjects_by_the_start_of_their_words(queue, compliance):
    [anne] = make_items(queue, 1, prefix="Smith, Anne: passport renewal")
    [annette] = make_items(queue, 1, prefix="Annette Jones invoice")
    [joanne] = make_items(queue, 1, prefix="Joanne Smith-Baker")
    client = client_for(compliance)
    url = reverse("admin:queue_app_reviewitem_changelist")

    def found(term: str) -> set[int]:
        response = client.get(url, {"q": term})
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    # The start of a word, in any case; not the middle of one (Joanne): no longer a substring.
    assert found("ann") == {anne.pk, annette.pk}
    assert found("SMI") == {anne.pk, joanne.pk}
    # Every word typed, in any order; a hyphenated word's parts are words.
    assert found("smi ann") == {anne.pk}
    assert found("baker jo") == {joanne.pk}
    # A single letter beside longer words is left out (as a prefix it would read a twentieth
    # of all subjects): an initial narrows nothing; alone, it is still a prefix.
    assert found("J. Smith") == {anne.pk, joanne.pk}
    assert found("x smith") == {anne.pk, joanne.pk}
    assert found("j") == {joanne.pk, annette.pk}
    assert found("ann nobody") == set()
    # Punctuation separates words and is never a query operator: no term makes it fail.
    assert found("smith,anne") == {anne.pk}
    assert found("a & b | !(c):* '\\") == set()
    assert found("ann:* | jo") == {annette.pk}  # not "or": every word, as prefixes
    assert found("&|!():*'\\<->") == set()
    assert found("") == {anne.pk, annette.pk, joanne.pk}
    assert "word" in client.get(url).content.decode()  # the help says what it finds


def test_an_exact_key_wins_over_the_words_of_subjects(queue, compliance):
    [receipt] = make_items(queue, 1, prefix="Receipt")
    # Its subject has every word of the first item's idempotency key, kyc-Receipt-0.
    make_items(queue, 1, prefix="kyc Receipt 0 copy")
    client = client_for(compliance)
    url = reverse("admin:queue_app_reviewitem_changelist")
    listed = client.get(url, {"q": "kyc-Receipt-0"}).context["cl"].result_list
    assert [obj.pk for obj in listed] == [receipt.pk]
    assert len(client.get(url, {"q": "receipt"}).context["cl"].result_list) == 2


def test_the_decision_search_finds_a_reviewer_by_todays_name_or_the_name_as_decided(
    queue, alice, bob, compliance
):
    items = make_items(queue, 3)
    by_alice = [decide(items[0], alice), decide(items[1], alice)]
    by_bob = decide(items[2], bob)
    alice.username = "alicia.renamed"
    alice.save()
    client = client_for(compliance)
    url = reverse("admin:queue_app_decision_changelist")

    def found(term: str) -> set[int]:
        response = client.get(url, {"q": term})
        assert response.status_code == 200
        return {obj.pk for obj in response.context["cl"].result_list}

    mine = {d.pk for d in by_alice}
    assert found("renamed") == mine  # part of today's name
    assert found("ALICE") == mine  # the whole name as decided, in any case
    assert found("alic") == mine  # part of today's name again
    assert found("lice") == set()  # part of the old name only: not a substring search
    assert found("bo") == {by_bob.pk}
    assert found(f"#{by_bob.pk}") == {by_bob.pk}  # a decision number
    assert found(str(items[0].pk)) >= {by_alice[0].pk}  # or an item number
    assert found("nobody") == set()
    assert found("a & b | !(c):* '\\") == set()
    assert found("") == mine | {by_bob.pk}


def test_it_filters_by_lease_count_bucket_and_state(queue, alice, compliance):
    items = make_items(queue, 3)
    claim_next(queue=queue, reviewer=alice)  # items[0] leased once
    client = client_for(compliance)
    url = reverse("admin:queue_app_reviewitem_changelist")

    def listed(**params: str) -> set[int]:
        return {obj.pk for obj in client.get(url, params).context["cl"].result_list}

    assert listed(leases="1") == {items[0].pk}
    assert listed(leases="0") == {items[1].pk, items[2].pk}
    assert listed(state__exact="leased") == {items[0].pk}
    assert listed(age="1h") == {item.pk for item in items}
    assert listed(age="old") == set()


def test_the_changelist_does_not_query_per_row(queue, compliance):
    client = client_for(compliance)
    url = reverse("admin:queue_app_reviewitem_changelist")
    make_items(queue, 2)
    client.get(url)  # warm caches (content types, session)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    make_items(queue, 40, prefix="more")
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(many) == len(few)


def test_the_decision_changelist_does_not_query_per_row(queue, alice, compliance):
    client = client_for(compliance)
    url = reverse("admin:queue_app_decision_changelist")
    items = make_items(queue, 12)
    decide(items[0], alice)
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    for item in items[1:]:
        decide(item, alice)
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(many) == len(few)
