"""A file put and a decision racing on one item, on two connections with real commits.

Whichever commits first wins cleanly: a put that commits while the decision waits on the row
makes the decision refuse with evidence changed (the close re-reads the row's attachments after
its lock wait); a decision that commits while the put waits makes the put refuse (decided).
"""

from __future__ import annotations

import pytest
from django.db import transaction

from queue_app.errors import AlreadyDecided, EvidenceChanged
from queue_app.models import Decision, ReviewItem
from queue_app.services import claim_next, put_attachment, submit_decision
from tests.attachments.conftest import image_bytes
from tests.blocking import Session, wait_until_blocked_by_me
from tests.conftest import make_items, shown_hash

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_file_put_while_the_decision_waits_makes_it_refuse(queue, alice, supervisor):
    make_items(queue, 1)
    held = claim_next(queue=queue, reviewer=alice)
    seen = shown_hash(held)
    decision = Session(
        lambda: submit_decision(
            item_id=held.pk,
            reviewer=alice,
            lease_token=held.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=seen,
        )
    )
    with transaction.atomic():
        put_attachment(item_id=held.pk, actor=supervisor, name="late.png", data=image_bytes())
        decision.start()
        wait_until_blocked_by_me(decision)
    with pytest.raises(EvidenceChanged):
        decision.outcome()
    item = ReviewItem.objects.get(pk=held.pk)
    assert (item.state, item.lease_token) == ("leased", held.lease_token)
    assert list(item.attachments) == ["late.png"]
    assert not Decision.objects.exists()


def test_a_decision_committed_while_the_put_waits_makes_the_put_refuse(queue, alice, supervisor):
    make_items(queue, 1)
    held = claim_next(queue=queue, reviewer=alice)
    put = Session(
        lambda: put_attachment(
            item_id=held.pk, actor=supervisor, name="late.png", data=image_bytes()
        )
    )
    with transaction.atomic():
        submit_decision(
            item_id=held.pk,
            reviewer=alice,
            lease_token=held.lease_token,
            verdict="approve",
            reason_code="verified",
            evidence_hash=shown_hash(held),
        )
        put.start()
        wait_until_blocked_by_me(put)
    with pytest.raises(AlreadyDecided):
        put.outcome()
    item = ReviewItem.objects.get(pk=held.pk)
    assert (item.state, item.attachments) == ("decided", {})
    assert Decision.objects.get().evidence_hash == shown_hash(held)
