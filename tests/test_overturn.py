"""overturn_decision: supersede once, four eyes, permission, standing outcome."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from queue_app.api.auth import issue_api_client
from queue_app.errors import AlreadySuperseded, InvalidReason, InvalidVerdict, NotPermitted
from queue_app.models import ApiClient, Decision, EffectJob
from queue_app.services import (
    claim_batch,
    claim_next,
    overturn_decision,
    standing_outcome,
    submit_decision,
)
from tests.conftest import make_items, shown_hash

pytestmark = pytest.mark.django_db


@pytest.fixture
def approved(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    return submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
    )


def _overturn(decision, admin, verdict="reject", reason="reviewer_error"):
    return overturn_decision(
        decision_id=decision.pk,
        admin=admin,
        corrected_verdict=verdict,
        reason_code=reason,
        note="second look",
    )


def test_it_supersedes_the_standing_decision(approved, supervisor):
    assert standing_outcome(item=approved.item_id) == "approve"
    overturn = _overturn(approved, supervisor)
    assert overturn.verdict == "overturn"
    assert overturn.supersedes_id == approved.pk
    assert overturn.corrected_verdict == "reject"
    assert standing_outcome(item=approved.item_id) == "reject"
    assert EffectJob.objects.filter(decision=overturn).exists()
    # The original row is untouched.
    assert Decision.objects.get(pk=approved.pk).verdict == "approve"


def test_a_second_overturn_of_the_same_row_fails_cleanly(approved, supervisor, reviewers_group):
    _overturn(approved, supervisor)
    other = User.objects.create_superuser("root", password="x")
    with pytest.raises(AlreadySuperseded):
        _overturn(approved, other, verdict="approve")
    assert Decision.objects.filter(supersedes=approved).count() == 1


def test_an_overturn_can_itself_be_overturned_by_someone_else(approved, supervisor):
    first = _overturn(approved, supervisor)
    other = User.objects.create_superuser("root", password="x")
    second = _overturn(first, other, verdict="approve")
    assert second.supersedes_id == first.pk
    assert standing_outcome(item=approved.item_id) == "approve"


def test_the_author_cannot_overturn_their_own_decision(approved, alice, supervisor):
    first = _overturn(approved, supervisor)
    with pytest.raises(NotPermitted, match="Four eyes"):
        _overturn(first, supervisor, verdict="approve")


def test_the_reviewer_cannot_overturn_their_decision_even_with_the_permission(approved, alice):
    from django.contrib.auth.models import Permission

    alice.user_permissions.add(Permission.objects.get(codename="can_overturn"))
    alice = User.objects.get(pk=alice.pk)
    with pytest.raises(NotPermitted, match="Four eyes"):
        _overturn(approved, alice)
    assert not Decision.objects.filter(verdict="overturn").exists()


def test_it_needs_the_can_overturn_permission(approved, bob):
    with pytest.raises(NotPermitted):
        _overturn(approved, bob)


def test_it_needs_an_overturn_reason_from_the_closed_set(approved, supervisor):
    with pytest.raises(InvalidReason):
        _overturn(approved, supervisor, reason="fraud")


def test_it_refuses_a_no_op_overturn(approved, supervisor):
    with pytest.raises(InvalidVerdict):
        _overturn(approved, supervisor, verdict="approve")


def _with_overturn_permission(user: User) -> User:
    from django.contrib.auth.models import Permission

    user.user_permissions.add(Permission.objects.get(codename="can_overturn"))
    return User.objects.get(pk=user.pk)  # fresh: permission cache


def test_an_author_anywhere_in_the_chain_cannot_overturn_in_it(approved, alice, supervisor):
    # Alice approved, Sam overturned to reject; Alice, now with the permission, may not put her
    # own verdict back by overturning Sam's overturn.
    sams = _overturn(approved, supervisor)
    alice = _with_overturn_permission(alice)
    with pytest.raises(NotPermitted, match=f"you made decision #{approved.pk} on this item"):
        _overturn(sams, alice, verdict="approve")
    assert standing_outcome(item=approved.item_id) == "reject"
    assert Decision.objects.filter(item_id=approved.item_id).count() == 2


def test_an_overturner_cannot_overturn_again_later_in_the_chain(approved, supervisor):
    first = _overturn(approved, supervisor)
    other = User.objects.create_superuser("root", password="x")
    second = _overturn(first, other, verdict="approve")
    with pytest.raises(NotPermitted, match=f"you made decision #{first.pk}"):
        _overturn(second, supervisor, verdict="reject")


def test_a_decision_by_an_api_client_counts_as_its_creators(queue, supervisor):
    robot, _token = issue_api_client(name="robot", can_adjudicate=True, queues=[queue])
    ApiClient.objects.filter(pk=robot.pk).update(created_by=supervisor)
    make_items(queue, 1)
    (item,) = claim_batch(queue=queue, worker=robot.user, n=1, ttl=timedelta(minutes=1))
    decided = submit_decision(
        item_id=item.pk,
        reviewer=robot.user,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
    )
    with pytest.raises(NotPermitted, match="API client “robot”, which you created"):
        _overturn(decided, supervisor)
    assert not Decision.objects.filter(verdict="overturn").exists()
    # Someone who did not create the client may.
    other = User.objects.create_superuser("root", password="x")
    assert _overturn(decided, other).supersedes_id == decided.pk
