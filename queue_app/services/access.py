"""Who may review which queue: by group, by API client grant, or everything (superusers)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Q, QuerySet

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import access as access_sql
from queue_app.errors import NotPermitted
from queue_app.models import Queue, ReviewItem
from queue_app.services._common import User, signed_in_id


def _settled_without_a_query(user: User) -> bool | None:
    """Whether the user may review every queue (a superuser) or none (anonymous, inactive);
    None when it depends on the queue: the group and API client grants below."""
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return None


def queues_for_user(*, user: User) -> QuerySet[Queue]:
    """Return the queues this user may review: by group, API client grant, or all (superusers)."""
    settled = _settled_without_a_query(user)
    if settled is not None:
        return Queue.objects.all() if settled else Queue.objects.none()
    # An API client's service user reviews the queues named on its client while it is not
    # revoked (the API's access list), on top of any group grant.
    return Queue.objects.filter(
        Q(reviewer_groups__user=user)
        | Q(api_clients__user=user, api_clients__revoked_at__isnull=True)
    ).distinct()


def may_see_operations(*, user: User) -> bool:
    """Return whether the user may open the operations pages (/ops/): active staff."""
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def user_can_review(*, user: User, queue: Queue | int) -> bool:
    """Return whether the user may claim and decide items of this queue."""
    settled = _settled_without_a_query(user)
    if settled is not None:
        return settled
    queue_id = queue if isinstance(queue, int) else queue.pk
    # The same rule as queues_for_user, as two index lookups rather than a DISTINCT join.
    return ReviewItem.objects.may_review(queue_id=queue_id, user_id=signed_in_id(user))


def require_may_send_evidence(*, user_id: int, queue_id: int) -> None:
    """Refuse an API client's service user that may no longer send evidence to this queue.

    Called inside the transaction that writes (access_sql.MAY_SEND_EVIDENCE): the API's own checks
    read the client as it was when the request began.
    """
    if not ReviewItem.objects.may_send_evidence(queue_id=queue_id, user_id=user_id):
        raise NotPermitted(
            "This API client may no longer send evidence to this queue. Nothing was written."
        )


def hold_permission(*, user: User, perm: str, refusal: str) -> None:
    """Refuse with `refusal` unless the user holds `perm` ("app_label.codename") as the
    database reads it now, and keep it held until the caller's transaction ends.

    For an administrator's write, after the view's has_perm (cached for the request) and
    before the write itself, inside the transaction that writes: access_sql.HOLD_PERMISSION locks
    the rows granting the permission, so a revocation either committed first and is seen here, or
    waits until this write has committed.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("hold_permission outside a transaction would hold nothing")
    app_label, codename = perm.split(".", 1)
    [row] = fetch_dicts(
        access_sql.HOLD_PERMISSION,
        {"user_id": user.pk, "app_label": app_label, "codename": codename},
    )
    if not row["held"]:
        raise PermissionDenied(refusal)
