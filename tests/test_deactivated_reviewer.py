"""A reviewer deactivated, or a superuser demoted, during a request is refused by the statement.

The user object a request holds says what was true when the request began; the review access
check (access_sql._MAY_REVIEW) reads is_active and is_superuser from auth_user in the statement that
claims or decides, so offboarding someone stops their next write.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from queue_app.errors import NotPermitted
from queue_app.models import Decision, ItemEvent, ReviewItem
from queue_app.services import claim_next, release_lease, renew_lease
from tests.conftest import approve_as_shown, make_items

pytestmark = pytest.mark.django_db


def test_a_reviewer_deactivated_after_the_claim_cannotapprove_as_shown(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    User.objects.filter(pk=alice.pk).update(is_active=False)  # alice's object still says active
    with pytest.raises(NotPermitted, match="no longer have access"):
        approve_as_shown(item, alice)
    assert not Decision.objects.exists()
    item.refresh_from_db()
    assert item.state == "leased" and item.lease_owner_id == alice.pk
    # Reactivated, the same lease decides.
    User.objects.filter(pk=alice.pk).update(is_active=True)
    assert approve_as_shown(item, alice).reviewer_id == alice.pk


def test_a_superuser_demoted_during_the_request_cannot_claim_orapprove_as_shown(queue):
    # No group gives root the queue: only being a superuser does.
    root = User.objects.create_superuser("root", password="pw-root")
    make_items(queue, 2)
    item = claim_next(queue=queue, reviewer=root)
    assert item is not None
    User.objects.filter(pk=root.pk).update(is_superuser=False)  # root's object still says so
    assert root.is_superuser
    with pytest.raises(NotPermitted):
        approve_as_shown(item, root)
    with pytest.raises(NotPermitted):
        claim_next(queue=queue, reviewer=root)
    assert not Decision.objects.exists()
    assert ReviewItem.objects.filter(lease_owner_id=root.pk).count() == 1


def test_a_deactivated_reviewer_cannot_claim(queue, alice):
    make_items(queue, 1)
    User.objects.filter(pk=alice.pk).update(is_active=False)
    assert alice.is_active  # the service's own check passes
    with pytest.raises(NotPermitted):
        claim_next(queue=queue, reviewer=alice)
    assert not ReviewItem.objects.filter(lease_owner_id=alice.pk).exists()


def test_a_deactivated_reviewer_cannot_renew_but_may_release(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    before = item.lease_expires
    User.objects.filter(pk=alice.pk).update(is_active=False)
    with pytest.raises(NotPermitted, match="no longer have access"):
        renew_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)
    item.refresh_from_db()
    assert item.lease_expires == before
    assert not ItemEvent.objects.filter(item=item, kind="renewed").exists()
    # Giving the work back needs no access: the item returns to the queue for someone else.
    release_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)
    item.refresh_from_db()
    assert item.state == "pending" and item.lease_owner_id is None
