"""A decision over the evidence rules' warnings needs the reviewer to say they read them.

The page preselects nothing while warnings are shown and asks for a tick; the decide refuses a
post without it for an item whose rules warn, with the page back and nothing written. A queue
without rules, or a post that carries the tick, keeps the one-statement decide.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from queue_app.errors import WarningsNotSeen
from queue_app.models import Decision, EffectJob, EvidenceRule, ReasonCode, ReviewItem
from queue_app.services import claim_next, create_item, submit_decision
from tests.conftest import shown_hash
from tests.console.conftest import login

pytestmark = pytest.mark.django_db

RED_FLAGS = {"provider": {"liveness_score": Decimal("0.48"), "pep": "hit"}}
CLEAN = {"provider": {"liveness_score": Decimal("0.93"), "pep": "clear"}}


@pytest.fixture
def ruled(queue):
    """The kyc queue with rules on liveness and PEP, and a safe default approve reason."""
    EvidenceRule.objects.create(
        queue=queue, path="provider.liveness_score", test="below", value="0.5", message="Low"
    )
    EvidenceRule.objects.create(
        queue=queue, path="provider.pep", test="in_list", value="hit", message="PEP hit"
    )
    ReasonCode.objects.filter(queue=queue, code="verified").update(is_default=True)
    return queue


def _leased(queue, alice, payload, key="k1") -> ReviewItem:
    create_item(queue=queue, subject="KYC", payload=payload, idempotency_key=key)
    return claim_next(queue=queue, reviewer=alice)


def _decide(client, item, **more):
    return client.post(
        f"/items/{item.pk}/decide/",
        {
            "lease_token": str(item.lease_token),
            "evidence_hash": shown_hash(item),
            "queue": str(item.queue_id),
            "verdict": "approve",
            "reason_code": "verified",
            **more,
        },
    )


def test_it_refuses_an_approval_over_red_flags_without_the_tick(ruled, alice):
    item = _leased(ruled, alice, RED_FLAGS)
    response = _decide(login(alice), item)
    assert response.status_code == 400
    assert "confirm that you have read them" in response.content.decode()
    assert not Decision.objects.exists() and not EffectJob.objects.exists()
    after = ReviewItem.objects.get(pk=item.pk)
    assert (after.state, after.lease_token) == ("leased", item.lease_token)
    # With the tick, the same post is recorded.
    assert _decide(login(alice), item, warnings_seen="on").status_code == 302
    assert Decision.objects.get().item_id == item.pk


def test_it_decides_clean_evidence_in_a_ruled_queue_without_the_tick(ruled, alice):
    item = _leased(ruled, alice, CLEAN)
    assert _decide(login(alice), item).status_code == 302
    assert Decision.objects.get().item_id == item.pk


@pytest.mark.parametrize("payload", [RED_FLAGS, CLEAN])
def test_the_service_judges_the_warnings_only_for_a_caller_that_shows_them(ruled, alice, payload):
    item = _leased(ruled, alice, payload)
    decide = dict(
        item_id=item.pk,
        reviewer=alice,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
        queue_id=item.queue_id,
    )
    if payload is RED_FLAGS:
        with pytest.raises(WarningsNotSeen):
            submit_decision(**decide, warnings_seen=False)
        assert not Decision.objects.exists()
    # The API shows no warnings (None); a clean item needs no tick.
    submit_decision(**decide, warnings_seen=None if payload is RED_FLAGS else False)
    assert Decision.objects.count() == 1


def test_the_page_asks_for_the_tick_and_marks_no_default_while_warnings_show(ruled, alice):
    item = _leased(ruled, alice, RED_FLAGS)
    html = login(alice).get(f"/items/{item.pk}/").content.decode()
    form = html.split('id="decision-form"')[1].split("</form>")[0]
    assert 'data-warnings="2"' in form
    assert re.search(
        r'<input type="checkbox" id="id_warnings_seen" name="warnings_seen" required>', form
    )
    assert "I have read the 2 warnings" in form
    assert " selected" not in form.split('id="id_reason_code"')[1].split("</select>")[0]


def test_the_page_without_warnings_asks_for_nothing(ruled, alice):
    item = _leased(ruled, alice, CLEAN)
    html = login(alice).get(f"/items/{item.pk}/").content.decode()
    form = html.split('id="decision-form"')[1].split("</form>")[0]
    assert "data-warnings" not in form and "warnings_seen" not in form
