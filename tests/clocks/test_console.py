"""The console's deadlines, hold form and subject history."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import claim_next, submit_decision
from tests.clocks.helpers import add_hold_reasons, item, make_hold_due
from tests.conftest import make_queue, shown_hash
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


def _page(client, item_id: int) -> str:
    response = client.get(f"/items/{item_id}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_status_box_says_due_in(alice, queue):
    it = item(queue, "k", due_at=timezone.now() + timedelta(hours=2, minutes=10, seconds=30))
    claim_next(queue=queue, reviewer=alice)
    html = _page(login(alice), it.pk)
    assert re.search(
        r'id="deadline" class="deadline at-risk"[^>]*>\s*<strong>Due in 2 h 10 min</strong>', html
    )


def test_the_status_box_says_overdue_by(alice, queue):
    it = item(queue, "k", due_at=timezone.now() - timedelta(minutes=5, seconds=20))
    html = _page(login(alice), it.pk)
    assert 'class="deadline breached"' in html
    assert "<strong>Overdue by 5 min</strong>" in html


def test_no_deadline_no_line(alice, queue):
    it = item(queue, "k")
    assert 'id="deadline"' not in _page(login(alice), it.pk)


def _hold_post(client, it, token, **fields):
    data = {
        "lease_token": str(token),
        "reason_code": "awaiting_documents",
        "hold_until": timezone.localtime(timezone.now() + timedelta(hours=3)).strftime(
            "%Y-%m-%dT%H:%M"
        ),
        **fields,
    }
    return client.post(f"/items/{it.pk}/hold/", data)


def test_the_holder_puts_an_item_on_hold_and_it_says_so(alice, bob, queue):
    add_hold_reasons(queue)
    it = item(queue, "k", due_at=timezone.now() + timedelta(hours=1))
    leased = claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    assert 'id="hold-form"' in _page(client, it.pk)
    response = _hold_post(client, it, leased.lease_token)
    assert response.status_code == 302 and response["Location"] == "/"
    assert ReviewItem.objects.get(pk=it.pk).state == "held"
    html = _page(login(bob), it.pk)
    assert 'id="hold-status"' in html and "Awaiting documents" in html
    assert "Deadline paused while on hold" in html
    assert claim_next(queue=queue, reviewer=bob) is None


def test_a_hold_submitted_twice_says_it_is_on_hold_both_times(alice, bob, queue):
    # A double click, or the form resent after a dropped answer: the first submission ended the
    # lease, the second names that same hold and is told what the first did.
    add_hold_reasons(queue)
    it = item(queue, "k")
    leased = claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    until = timezone.localtime(timezone.now() + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    for _ in range(2):
        response = _hold_post(client, it, leased.lease_token, hold_until=until)
        assert response.status_code == 302 and response["Location"] == "/"
        follow = client.get("/").content.decode()
        assert f"Item #{it.pk} is on hold until" in follow
    assert ItemEvent.objects.filter(item=it, kind="held").count() == 1
    # A different resume time under the spent token is a second hold, and is refused.
    later = timezone.localtime(timezone.now() + timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M")
    refused = _hold_post(client, it, leased.lease_token, hold_until=later)
    assert refused["Location"] == f"/items/{it.pk}/"
    assert "Not put on hold" in client.get(refused["Location"]).content.decode()
    # Nor is another reviewer's replay of alice's hold taken for hers.
    claim_next(queue=queue, reviewer=bob)  # nothing to take: the item is held
    replay = _hold_post(login(bob), it, leased.lease_token, hold_until=until)
    assert replay["Location"] == f"/items/{it.pk}/"


def _alices_hold_come_due(queue, alice):
    """alice holds an item for three hours, and the hold comes due; return what her
    resubmission of that hold sends: the item, her lease, her client and the time."""
    add_hold_reasons(queue)
    it = item(queue, "k")
    leased = claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    until = timezone.localtime(timezone.now() + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M")
    assert _hold_post(client, it, leased.lease_token, hold_until=until)["Location"] == "/"
    assert "is on hold until" in client.get("/").content.decode()  # read, so gone
    make_hold_due(it.pk)
    return it, leased, client, until


def test_a_hold_resubmitted_after_it_ended_says_so(alice, bob, queue):
    it, leased, client, until = _alices_hold_come_due(queue, alice)
    assert claim_next(queue=queue, reviewer=bob).pk == it.pk
    again = _hold_post(client, it, leased.lease_token, hold_until=until)
    assert again["Location"] == "/"
    assert "that hold has ended since" in client.get("/").content.decode()
    assert ReviewItem.objects.get(pk=it.pk).lease_owner_id == bob.pk


def test_a_bad_hold_says_why_and_changes_nothing(alice, queue):
    add_hold_reasons(queue)
    it = item(queue, "k")
    leased = claim_next(queue=queue, reviewer=alice)
    client = login(alice)
    far = timezone.localtime(timezone.now() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M")
    for fields, words in [
        ({"reason_code": "nonsense"}, "not one of the hold reasons"),
        ({"hold_until": far}, "maximum hold"),
        ({"hold_until": "tomorrow-ish"}, "date and time"),
        ({"lease_token": "00000000-0000-0000-0000-000000000000"}, "Not put on hold"),
    ]:
        response = _hold_post(client, it, leased.lease_token, **fields)
        assert response.status_code == 302
        follow = client.get(response["Location"]).content.decode()
        assert words in follow.replace("&#x27;", "'"), fields
    assert ReviewItem.objects.get(pk=it.pk).state == "leased"
    assert not ItemEvent.objects.filter(item=it, kind="held").exists()


def test_hold_is_post_only_and_needs_access(alice, outsider, queue):
    add_hold_reasons(queue)
    it = item(queue, "k")
    leased = claim_next(queue=queue, reviewer=alice)
    assert login(alice).get(f"/items/{it.pk}/hold/").status_code == 405
    assert _hold_post(login(outsider), it, leased.lease_token).status_code == 404
    assert ReviewItem.objects.get(pk=it.pk).state == "leased"


def test_home_counts_breached_and_due_soon_per_queue(alice, queue):
    now = timezone.now()
    item(queue, "late", due_at=now - timedelta(minutes=1))
    item(queue, "soon", due_at=now + timedelta(hours=1))
    item(queue, "later", due_at=now + timedelta(days=2))
    item(queue, "none")
    html = login(alice).get("/").content.decode()
    row = html[html.index('data-queue="kyc"') :]
    row = row[: row.index("</tr>")]
    assert re.search(r'breached-count breached">1<', row)
    assert re.search(r'at-risk-count at-risk"[^>]*>1<', row)


def test_a_due_hold_counts_as_waiting_on_home(alice, bob, queue):
    add_hold_reasons(queue)
    it = item(queue, "k")
    leased = claim_next(queue=queue, reviewer=alice)
    _hold_post(login(alice), it, leased.lease_token)
    html = login(bob).get("/").content.decode()
    assert 'data-pending="0"' not in html or "Nothing waiting" in html
    make_hold_due(it.pk)
    html = login(bob).get("/").content.decode()
    assert 'data-pending="1"' in html


# -- the subject's history never leaks another queue --------------------------------------------


@pytest.fixture
def two_queues(queue, reviewers_group):
    """kyc (alice's group) and aml (only the aml group); one subject in both."""
    aml_group = Group.objects.create(name="AML")
    aml = make_queue("aml", group=aml_group)
    carol = User.objects.create_user("carol")
    carol.groups.add(aml_group)
    return queue, aml, carol


def test_the_subject_list_shows_only_queues_the_viewer_reviews(alice, bob, two_queues):
    kyc, aml, carol = two_queues
    first = item(kyc, "k1", subject_key="cust-42", subject="First KYC case")
    lease = claim_next(queue=kyc, reviewer=bob)
    submit_decision(
        item_id=first.pk,
        reviewer=bob,
        lease_token=lease.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(lease),
    )
    secret = item(aml, "a1", subject_key="cust-42", subject="AML secret case")
    current = item(kyc, "k2", subject_key="cust-42", subject="Second KYC case")
    unrelated = item(kyc, "k3", subject_key="cust-7")

    html = _page(login(alice), current.pk)
    section = html[html.index('class="module subject-history"') :]
    assert f'data-item="{first.pk}"' in section and "fraud" in section and "bob" in section
    assert f'data-item="{secret.pk}"' not in html and "AML secret case" not in html
    assert f'data-item="{unrelated.pk}"' not in section
    assert f'data-item="{current.pk}"' not in section  # not itself

    # carol reviews aml only: she sees the aml item's page and nothing of kyc's
    html = _page(login(carol), secret.pk)
    assert "No other items for this subject in queues you review." in html
    assert "First KYC case" not in html and "Second KYC case" not in html
    # and the kyc item's page is not hers at all
    assert login(carol).get(f"/items/{current.pk}/").status_code == 404


def test_the_subject_list_is_newest_first_and_bounded(alice, queue):
    made = [item(queue, f"k{i}", subject_key="cust-1") for i in range(25)]
    html = _page(login(alice), made[0].pk)
    shown = [int(x) for x in re.findall(r'<tr data-item="(\d+)"', html)]
    assert shown == [it.pk for it in reversed(made[1:])][:20]


def test_a_hold_resubmitted_after_a_later_hold_says_its_own_ended(alice, bob, queue):
    it, leased, client, until = _alices_hold_come_due(queue, alice)
    bobs = claim_next(queue=queue, reviewer=bob)
    later = timezone.localtime(timezone.now() + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M")
    assert _hold_post(login(bob), it, bobs.lease_token, hold_until=later)["Location"] == "/"
    # The item is held again, by bob's hold: alice's resubmission is not told it is on hold.
    again = _hold_post(client, it, leased.lease_token, hold_until=until)
    assert again["Location"] == "/"
    page = client.get("/").content.decode()
    assert "that hold has ended since" in page and "is on hold until" not in page
