"""overturn_decision: supersede once, four eyes, permission, standing outcome."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission, User

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
from queue_app.services.decisions import NO_OVERTURN_PERMISSION
from tests.conftest import approve_as_shown, make_items, shown_hash, with_overturn_permission

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
    alice = with_overturn_permission(alice)
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


def test_an_author_anywhere_in_the_chain_cannot_overturn_in_it(approved, alice, supervisor):
    # Alice approved, Sam overturned to reject; Alice, now with the permission, may not put her
    # own verdict back by overturning Sam's overturn.
    sams = _overturn(approved, supervisor)
    alice = with_overturn_permission(alice)
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
    decided = approve_as_shown(item, robot.user)
    with pytest.raises(NotPermitted, match="API client “robot”, which you created"):
        _overturn(decided, supervisor)
    assert not Decision.objects.filter(verdict="overturn").exists()
    # Someone who did not create the client may.
    other = User.objects.create_superuser("root", password="x")
    assert _overturn(decided, other).supersedes_id == decided.pk


def _revoked_behind_djangos_cache(user: User, revoke) -> User:
    """Revoke in the database while this user object still says it holds can_overturn.

    Django caches a user's permissions on the object for its lifetime (a request); the
    service's has_perm then passes, and the insert's trigger (decision_overturn_permission)
    must refuse.
    """
    assert user.has_perm("queue_app.can_overturn")  # fills the cache
    revoke()
    assert user.has_perm("queue_app.can_overturn")  # still cached
    return user


def _nothing_overturned(decision) -> None:
    assert not Decision.objects.filter(verdict="overturn").exists()
    assert standing_outcome(item=decision.item_id) == decision.verdict
    assert not EffectJob.objects.exclude(decision_id=decision.pk).exists()


def test_a_permission_removed_during_the_request_is_refused_by_the_insert(approved, supervisor):
    permission = Permission.objects.get(codename="can_overturn")
    _revoked_behind_djangos_cache(
        supervisor, lambda: supervisor.user_permissions.remove(permission)
    )
    with pytest.raises(NotPermitted, match=NO_OVERTURN_PERMISSION):
        _overturn(approved, supervisor)
    _nothing_overturned(approved)


def test_a_group_that_granted_the_permission_removed_during_the_request_is_refused(approved, bob):
    admins = Group.objects.create(name="Overturners")
    admins.permissions.add(Permission.objects.get(codename="can_overturn"))
    bob.groups.add(admins)
    bob = User.objects.get(pk=bob.pk)
    _revoked_behind_djangos_cache(bob, lambda: bob.groups.remove(admins))
    with pytest.raises(NotPermitted, match=NO_OVERTURN_PERMISSION):
        _overturn(approved, bob)
    _nothing_overturned(approved)
    # Given the group back, the same overturn goes through.
    bob.groups.add(admins)
    assert _overturn(approved, User.objects.get(pk=bob.pk)).supersedes_id == approved.pk


def test_a_superuser_deactivated_during_the_request_is_refused(approved):
    root = User.objects.create_superuser("root", password="pw-root")
    _revoked_behind_djangos_cache(
        root, lambda: User.objects.filter(pk=root.pk).update(is_active=False)
    )
    with pytest.raises(NotPermitted, match=NO_OVERTURN_PERMISSION):
        _overturn(approved, root)
    _nothing_overturned(approved)
