"""An administrator's write holds its permission in the database, not only in has_perm's cache.

Django caches a user's permissions on request.user for the whole request, so a revocation
committed after the view asked has_perm used to be missed by the write that followed. Each
write here (an admin save, delete or action, a second-factor reset, a dead job's retry) asks
the database again in its own transaction (services.access.hold_permission), and locks what
grants the permission until it commits.

Two halves, each with separate connections and real commits where it matters:
- a revocation committed before the write is refused by it, although has_perm still says yes;
- a revocation attempted while the write's transaction holds the permission waits for it.
The end-to-end cases revoke the permission in the middle of a real admin request (after the
admin's own has_*_permission said yes) and see a 403 with nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

from queue_app.identity.mfa import reset_second_factor
from queue_app.models import ApiClient, EffectJob, Queue, ReasonCode
from queue_app.services import claim_next, retry_effect_jobs
from queue_app.services.access import hold_permission
from tests.admin.conftest import client_for
from tests.blocking import Session, wait_until_blocked_by_me
from tests.conftest import approve_as_shown, make_items

CHANGE_USER = "auth.change_user"


def _perm(dotted: str) -> Permission:
    app_label, codename = dotted.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def _holder(path: str, perm: str = CHANGE_USER) -> User:
    """Staff holding `perm` by one path: directly, through a group, or as a superuser."""
    user = User.objects.create_user(
        username=f"holder-{path}", password="pw", is_staff=True, is_superuser=path == "superuser"
    )
    if path == "direct":
        user.user_permissions.add(_perm(perm))
    elif path == "group":
        group = Group.objects.create(name=f"holders-{path}")
        group.permissions.add(_perm(perm))
        user.groups.add(group)
    return User.objects.get(pk=user.pk)


# Each way Django's own admin takes a permission away, applied to the user's rows.
REVOCATIONS: dict[str, tuple[str, Callable[[User], Any]]] = {
    "direct grant removed": (
        "direct",
        lambda u: User.objects.get(pk=u.pk).user_permissions.clear(),
    ),
    "left the group": ("group", lambda u: User.objects.get(pk=u.pk).groups.clear()),
    "group lost the permission": (
        "group",
        lambda u: Group.objects.get(user=u).permissions.clear(),
    ),
    "group deleted": ("group", lambda u: Group.objects.filter(user=u).delete()),
    "superuser flag off": (
        "superuser",
        lambda u: User.objects.filter(pk=u.pk).update(is_superuser=False),
    ),
    "deactivated": ("direct", lambda u: User.objects.filter(pk=u.pk).update(is_active=False)),
}


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["direct", "group", "superuser"])
def test_a_held_permission_lets_the_write_through(path):
    user = _holder(path)
    with transaction.atomic():
        hold_permission(user=user, perm=CHANGE_USER, refusal="refused")


@pytest.mark.django_db
def test_another_permission_is_not_enough():
    user = _holder("direct", perm="auth.view_user")
    with transaction.atomic(), pytest.raises(PermissionDenied, match=r"^refused$"):
        hold_permission(user=user, perm=CHANGE_USER, refusal="refused")


@pytest.mark.django_db(transaction=True)  # no test-wide transaction around it
def test_holding_outside_a_transaction_is_a_mistake_not_a_pass():
    with pytest.raises(RuntimeError, match="outside a transaction"):
        hold_permission(user=_holder("direct"), perm=CHANGE_USER, refusal="refused")


@pytest.mark.django_db
@pytest.mark.parametrize("revocation", list(REVOCATIONS))
def test_a_revocation_the_request_cached_past_is_seen_by_the_write(revocation):
    path, revoke = REVOCATIONS[revocation]
    user = _holder(path)
    assert user.has_perm(CHANGE_USER)  # what the view asked, now cached on the object
    revoke(user)
    assert user.has_perm(CHANGE_USER)  # the request's answer has not changed...
    with transaction.atomic(), pytest.raises(PermissionDenied):
        hold_permission(user=user, perm=CHANGE_USER, refusal="refused")  # ...the write's has


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revocation", list(REVOCATIONS))
def test_a_revocation_waits_until_the_holding_write_commits(revocation):
    path, revoke = REVOCATIONS[revocation]
    user = _holder(path)
    revoker = Session(lambda: revoke(user))
    with transaction.atomic():
        hold_permission(user=user, perm=CHANGE_USER, refusal="refused")
        revoker.start()
        wait_until_blocked_by_me(revoker)
    revoker.outcome()  # it went through once the write had committed
    with transaction.atomic(), pytest.raises(PermissionDenied):
        hold_permission(user=user, perm=CHANGE_USER, refusal="refused")


@pytest.mark.django_db
def test_a_second_factor_reset_by_an_admin_revoked_meanwhile_removes_nothing():
    staff = User.objects.create_user(username="lost-phone", password="pw", is_staff=True)
    TOTPDevice.objects.create(user=staff, name="phone", confirmed=True)
    resetter = _holder("group")
    assert resetter.has_perm(CHANGE_USER)  # the view's check, cached
    resetter.groups.clear()
    with pytest.raises(PermissionDenied, match="Nothing was removed"):
        reset_second_factor(user=staff, by=resetter)
    assert TOTPDevice.objects.filter(user=staff).exists()


@pytest.mark.django_db
def test_a_retry_by_an_operator_revoked_meanwhile_revives_nothing(queue, alice, retrier):
    make_items(queue, 1)
    decision = approve_as_shown(claim_next(queue=queue, reviewer=alice), alice)
    EffectJob.objects.filter(pk=decision.pk).update(dead=True, attempts=8)
    assert retrier.has_perm("queue_app.change_effectjob")
    retrier.user_permissions.clear()
    with pytest.raises(PermissionDenied, match="Nothing was retried"):
        retry_effect_jobs(decision_ids=[decision.pk], operator=retrier)
    assert EffectJob.objects.get(pk=decision.pk).dead


# --- In the middle of a real admin request -------------------------------------------------


@pytest.fixture
def revoked_mid_request(monkeypatch):
    """Make the admin of `model` revoke the signed-in user's access right after its own
    has_<action>_permission first says yes: the rest of the request runs on the cached yes."""

    def arrange(model: type, action: str, revoke: Callable[[User], Any]) -> None:
        model_admin = admin.site._registry[model]
        name = f"has_{action}_permission"
        asked = getattr(model_admin, name)
        done: list[bool] = []

        def has_permission(request, *args, **kwargs):
            allowed = asked(request, *args, **kwargs)
            if allowed and not done and request.method == "POST":
                done.append(True)
                revoke(request.user)
            return allowed

        monkeypatch.setattr(model_admin, name, has_permission)

    return arrange


@pytest.fixture
def admins_member(db) -> User:
    """Staff whose every admin permission comes from one group (as seed_demo's Admins)."""
    group = Group.objects.create(name="Admins")
    group.permissions.set(Permission.objects.all())
    user = User.objects.create_user(username="ada", password="pw-ada", is_staff=True)
    user.groups.add(group)
    return user


def _leave_groups(user: User) -> None:
    User.objects.get(pk=user.pk).groups.clear()


@pytest.mark.django_db
def test_a_group_created_by_an_admin_revoked_mid_request_is_not_created(
    admins_member, revoked_mid_request
):
    revoked_mid_request(Group, "add", _leave_groups)
    response = client_for(admins_member).post(
        "/admin/auth/group/add/",
        {"name": "accomplices", "permissions": [_perm(CHANGE_USER).pk]},
    )
    assert response.status_code == 403
    assert "no longer have permission to add groups" in response.content.decode()
    assert not Group.objects.filter(name="accomplices").exists()


@pytest.mark.django_db
def test_a_user_deleted_by_an_admin_revoked_mid_request_stays(
    admins_member, revoked_mid_request, alice
):
    revoked_mid_request(User, "delete", _leave_groups)
    response = client_for(admins_member).post(
        f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 403
    assert User.objects.filter(pk=alice.pk).exists()


@pytest.mark.django_db
def test_a_queue_saved_by_an_admin_revoked_mid_request_is_unchanged(
    admins_member, revoked_mid_request, queue
):
    revoked_mid_request(Queue, "change", _leave_groups)
    page = client_for(admins_member).get(f"/admin/queue_app/queue/{queue.pk}/change/")
    data = _form_data(page.context["adminform"].form, page.context["inline_admin_formsets"])
    data["name"] = "Renamed by someone who may no longer"
    response = client_for(admins_member).post(f"/admin/queue_app/queue/{queue.pk}/change/", data)
    assert response.status_code == 403
    assert Queue.objects.get(pk=queue.pk).name == queue.name


def _an_api_client(queue: Queue) -> ApiClient:
    from tests.api.conftest import make_client

    return make_client("robot", [queue])[0]


def _a_reason_code(queue: Queue) -> ReasonCode:
    return ReasonCode.objects.filter(queue=queue).first()


# Changelist actions that write: (model, its action, the row it acts on, the column it sets).
WRITE_ACTIONS = {
    "revoke API clients": (ApiClient, "revoke", _an_api_client, "revoked_at"),
    "retire reason codes": (ReasonCode, "retire", _a_reason_code, "retired_at"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(WRITE_ACTIONS))
def test_an_action_run_by_an_admin_revoked_mid_request_changes_nothing(
    case, admins_member, revoked_mid_request, queue
):
    model, action, make_row, column = WRITE_ACTIONS[case]
    row = make_row(queue)
    revoked_mid_request(model, "change", _leave_groups)
    response = client_for(admins_member).post(
        f"/admin/queue_app/{model._meta.model_name}/",
        {"action": action, "_selected_action": [row.pk]},
    )
    assert response.status_code == 403
    assert getattr(model.objects.get(pk=row.pk), column) is None


@pytest.mark.django_db
def test_groups_deleted_from_the_list_by_an_admin_revoked_mid_request_stay(
    admins_member, revoked_mid_request
):
    auditors = Group.objects.create(name="auditors")
    revoked_mid_request(Group, "delete", _leave_groups)
    response = client_for(admins_member).post(
        "/admin/auth/group/",
        {"action": "delete_selected", "_selected_action": [auditors.pk], "post": "yes"},
    )
    assert response.status_code == 403
    assert Group.objects.filter(pk=auditors.pk).exists()


@pytest.mark.django_db
def test_the_api_client_revoke_action_needs_the_change_permission(queue):
    from tests.api.conftest import make_client

    api_client, _ = make_client("robot", [queue])
    viewer = User.objects.create_user(username="vic", password="pw-vic", is_staff=True)
    viewer.user_permissions.add(_perm("queue_app.view_apiclient"))
    client_for(viewer).post(
        "/admin/queue_app/apiclient/", {"action": "revoke", "_selected_action": [api_client.pk]}
    )
    assert ApiClient.objects.get(pk=api_client.pk).revoked_at is None


def _form_data(form: Any, inline_formsets: Any) -> dict[str, Any]:
    """The POST a browser would send back for an unchanged admin change form."""
    data: dict[str, Any] = {}
    for bound in form:
        value = bound.value()
        if value is None:
            continue
        data[bound.html_name] = value
    for inline in inline_formsets:
        formset = inline.formset
        management = formset.management_form
        for bound in management:
            data[bound.html_name] = bound.value()
        for child in formset.forms:
            for bound in child:
                value = bound.value()
                if value is not None:
                    data[bound.html_name] = value
    return data
