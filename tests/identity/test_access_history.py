"""The access history: recorded by the database (even for raw SQL), append-only, readable.

Each test changes access one way (the admin, the ORM, raw SQL as a DBA would) and looks for the
record: what changed, before and after, who did it, and the request's trace id.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pghistory.models
import pytest
from django.apps import apps
from django.contrib.auth.models import Group, Permission, User
from django.db import DatabaseError, connection, transaction
from django.test import Client

from queue_app.api.auth import issue_api_client
from queue_app.identity.oidc import link_account
from queue_app.models import ApiClient, HoldReason, Queue, ReasonCode
from queue_app.models.access_history import EVENT_MODELS
from queue_app.models.lane_tasks import CheckPolicy
from queue_app.selectors.access_timeline import DATABASE, describe, history_events
from tests.conftest import make_queue

pytestmark = pytest.mark.django_db


def rows(**filters):
    return list(describe(history_events(**filters)))


def test_a_group_membership_added_with_raw_sql_is_recorded_as_the_database(alice):
    kyc = Group.objects.create(name="KYC seniors")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO auth_user_groups (user_id, group_id) VALUES (%s, %s)", [alice.pk, kyc.pk]
        )
    (row,) = [r for r in rows(user=alice) if "KYC seniors" in r.subject]
    assert row.action == "added"
    assert row.subject == f"user alice (#{alice.pk}) in group KYC seniors (#{kyc.pk})"
    assert row.by == DATABASE
    assert row.trace_id == ""


def test_raw_sql_removal_and_staff_flag_are_recorded_with_before_and_after(alice):
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM auth_user_groups WHERE user_id = %s", [alice.pk])
        cursor.execute("UPDATE auth_user SET is_staff = true WHERE id = %s", [alice.pk])
    found = {(r.kind, r.action): r for r in rows(user=alice)}
    assert found[("group membership", "removed")].by == DATABASE
    assert found[("user flags", "changed")].change == "is_staff: False → True"


def test_a_login_or_password_change_is_not_access_history(alice):
    before = history_events(user=alice).count()
    User.objects.filter(pk=alice.pk).update(last_login="2026-01-01T00:00:00Z", password="x")
    assert history_events(user=alice).count() == before


def test_an_admin_change_names_the_admin_and_the_request_trace_id(root_client, root, alice):
    seniors = Group.objects.create(name="Seniors")
    trace = str(uuid.uuid4())
    response = root_client.post(
        f"/admin/auth/user/{alice.pk}/change/",
        {
            "username": "alice",
            "is_active": "on",
            "groups": [g.pk for g in alice.groups.all()] + [seniors.pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
        headers={"X-Request-ID": trace},
    )
    assert response.status_code == 302, response.content[:2000]
    assert response["X-Request-ID"] == trace
    (row,) = [r for r in rows(user=alice) if r.subject.endswith(f"Seniors (#{seniors.pk})")]
    assert row.by == f"root (#{root.pk})"
    assert row.trace_id == trace


def test_a_request_without_a_usable_trace_header_gets_a_fresh_trace_id(root_client):
    response = root_client.get("/admin/", headers={"X-Request-ID": "not-a-uuid'; --"})
    assert uuid.UUID(response["X-Request-ID"])


def test_queue_history_covers_its_groups_settings_reasons_and_clients(queue, alice, bob):
    seniors = Group.objects.create(name="Seniors")
    queue.reviewer_groups.add(seniors)
    bob.groups.add(seniors)  # bob now reviews kyc through Seniors
    Queue.objects.filter(pk=queue.pk).update(lease_ttl=timedelta(minutes=20))
    ReasonCode.objects.filter(queue=queue, code="fraud").update(retired_at="2026-11-30T12:00:00Z")
    issue_api_client(name="intake-bot", can_intake=True, queues=[queue])
    other = make_queue("aml")
    other.reviewer_groups.add(Group.objects.create(name="AML"))

    found = rows(queue=queue)
    subjects = [r.subject for r in found]
    assert f"queue kyc (#{queue.pk}) reviewed by group Seniors (#{seniors.pk})" in subjects
    assert f"user bob (#{bob.pk}) in group Seniors (#{seniors.pk})" in subjects
    ttl = next(r for r in found if r.kind == "queue configuration" and r.action == "changed")
    assert ttl.change == "lease_ttl: 00:05:00 → 00:20:00"
    assert any(r.kind == "reason code" and "retired_at: — →" in r.change for r in found)
    assert any(r.kind == "API client queue" and "intake-bot" in r.subject for r in found)
    assert not any("AML" in r.subject or "aml" in r.subject for r in found)


def test_api_client_scopes_and_revocation_are_recorded_but_use_is_not(queue):
    client, _ = issue_api_client(name="robot", can_adjudicate=True, queues=[queue])
    ApiClient.objects.filter(pk=client.pk).update(last_used_at="2026-11-30T12:00:00Z")
    ApiClient.objects.filter(pk=client.pk).update(can_intake=True)
    ApiClient.objects.filter(pk=client.pk).update(revoked_at="2026-11-30T13:00:00Z")
    changes = [r.change for r in rows() if r.kind == "API client" and r.action == "changed"]
    assert changes == ["revoked_at: — → 2026-11-30T13:00:00+00:00", "can_intake: False → True"]


def test_permissions_of_users_and_groups_are_recorded(alice):
    perm = Permission.objects.get(codename="can_overturn")
    alice.user_permissions.add(perm)
    group = Group.objects.create(name="Supervisors")
    group.permissions.add(perm)
    kinds = {(r.kind, r.subject) for r in rows()}
    perm_name = f"queue_app.can_overturn (#{perm.pk})"
    assert ("user permission", f"user alice (#{alice.pk}): {perm_name}") in kinds
    assert ("group permission", f"group Supervisors (#{group.pk}): {perm_name}") in kinds


@pytest.fixture
def every_kind_of_change(queue, alice) -> None:
    """At least one record in every history table."""
    from queue_app.identity.mfa import new_recovery_codes, pending_totp
    from tests.statements.conftest import give_policy, map_reason

    group = Group.objects.create(name="G")
    alice.groups.add(group)
    alice.is_staff = True
    alice.save()
    perm = Permission.objects.get(codename="can_overturn")
    alice.user_permissions.add(perm)
    group.permissions.add(perm)
    queue.reviewer_groups.add(group)
    issue_api_client(name="robot", queues=[queue])
    ReasonCode.objects.filter(queue=queue, code="fraud").update(label="Fraud")
    pending_totp(alice)
    new_recovery_codes(user=alice)
    HoldReason.objects.create(queue=queue, code="docs", label="Awaiting documents")
    CheckPolicy.objects.create(queue=queue, verdict="approve")
    link_account(user=alice, subject="alice-at-idp", issuer="https://idp.example")
    give_policy(queue)
    map_reason(queue, "fraud")
    # The all-queues stop switch: its row comes from a migration, which a module that flushes
    # the database (the every-page axe sweep) does not keep, so press it here.
    from django.utils import timezone

    from queue_app.models import AutomationSwitch

    AutomationSwitch.objects.get_or_create(pk=1)
    AutomationSwitch.objects.filter(pk=1).update(stopped_at=timezone.now())
    AutomationSwitch.objects.filter(pk=1).update(stopped_at=None)


@pytest.mark.parametrize("model", EVENT_MODELS, ids=lambda m: m.__name__)
def test_every_history_table_refuses_update_and_delete(model, every_kind_of_change):
    table = model._meta.db_table
    count = f"SELECT count(*) FROM {table}"
    with connection.cursor() as cursor:
        cursor.execute(count)
        (before,) = cursor.fetchone()
    assert before > 0
    for statement in (f"UPDATE {table} SET pgh_label = 'x'", f"DELETE FROM {table}"):
        with (
            pytest.raises(DatabaseError, match=r"Cannot (update|delete)"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)
    with connection.cursor() as cursor:
        cursor.execute(count)
        assert cursor.fetchone() == (before,)


@pytest.mark.parametrize("model", EVENT_MODELS, ids=lambda m: m.__name__)
def test_it_refuses_to_truncate_any_history_table(model, every_kind_of_change):
    table = model._meta.db_table
    with (
        pytest.raises(DatabaseError, match=r"append-only: TRUNCATE refused"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"TRUNCATE {table}")
    assert model.objects.exists()


def test_every_event_table_of_the_app_is_in_the_history():
    events = {
        m
        for m in apps.get_app_config("queue_app").get_models()
        if issubclass(m, pghistory.models.Event)
    }
    assert events == set(EVENT_MODELS)


def test_the_history_tables_keep_a_row_when_an_update_is_attempted(alice):
    alice.groups.add(Group.objects.create(name="G2"))
    before = [r.subject for r in rows(user=alice)]
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE queue_app_usergroupevent SET user_id = 0")
    assert [r.subject for r in rows(user=alice)] == before


def test_the_admin_history_page_filters_by_queue_user_and_date(root_client, queue, alice):
    alice.groups.add(Group.objects.create(name="Elsewhere"))
    page = root_client.get("/admin/access-history/", {"queue": "kyc"})
    assert page.status_code == 200
    text = page.content.decode()
    assert "queue kyc" in text
    assert "Elsewhere" not in text
    by_user = root_client.get("/admin/access-history/", {"user": "alice"}).content.decode()
    assert "Elsewhere" in by_user
    future = root_client.get("/admin/access-history/", {"since": "2999-01-01"}).content.decode()
    assert "No access changes match." in future


@pytest.mark.parametrize(
    "query, words",
    [
        ({"queue": "nope"}, "No queue is named"),
        ({"user": "nobody"}, "No user is named"),
        ({"since": "yesterday"}, "Enter a valid date"),
        ({"since": "2026-02-02", "until": "2026-01-01"}, "The first day comes after the last"),
        ({"queue": "x" * 500}, "at most 64 characters"),
    ],
)
def test_the_admin_history_page_answers_bad_filters_with_words(root_client, query, words):
    response = root_client.get("/admin/access-history/", query)
    assert response.status_code == 400
    assert words in response.content.decode()
    csv_response = root_client.get("/admin/access-history.csv", query)
    assert csv_response.status_code == 400


def test_staff_without_permission_to_view_users_cannot_read_the_history(db):
    vic = User.objects.create_user("vic", is_staff=True)
    client = Client()
    client.force_login(vic)
    assert client.get("/admin/access-history/").status_code == 403
    assert client.get("/admin/access-history.csv").status_code == 403


def test_the_csv_export_neutralises_formulas(root_client, alice):
    alice.groups.add(Group.objects.create(name='=HYPERLINK("http://evil")'))
    response = root_client.get("/admin/access-history.csv", {"user": "alice"})
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    header, *lines = body.splitlines()
    assert header == "at,kind,action,subject,change,by,trace_id"
    assert any("in group =HYPERLINK" in line for line in lines)  # inside the cell, not leading
    assert not any(",=" in line for line in lines)


def test_the_queue_admin_page_links_to_its_access_history(root_client, queue):
    page = root_client.get(f"/admin/queue_app/queue/{queue.pk}/change/").content.decode()
    assert 'href="/admin/access-history/?queue=kyc"' in page


# Settings and rules tracked after the first ones: queue
# sensitivity, deadlines, holds and QA sampling; maker-checker policies; hold reasons.


@pytest.mark.parametrize(
    "column, value, change",
    [
        ("sensitive", "true", "sensitive: False → True"),
        ("default_sla", "'2 hours'", "default_sla: — → 02:00:00"),
        ("sla_warning", "'1 hour'", "sla_warning: 04:00:00 → 01:00:00"),
        ("max_hold", "'3 days'", "max_hold: 7 days → 3 days"),
        ("qa_rate", "12.5", "qa_rate: 0.00 → 12.50"),
    ],
)
def test_a_new_queue_setting_changed_with_raw_sql_is_recorded_as_the_database(
    queue, column, value, change
):
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE queue_app_queue SET {column} = {value} WHERE id = %s", [queue.pk])
    (row,) = [
        r for r in rows(queue=queue) if r.kind == "queue configuration" and r.action == "changed"
    ]
    assert row.subject == f"queue kyc (#{queue.pk})"
    assert row.change == change
    assert row.by == DATABASE
    assert row.trace_id == ""


def test_check_policies_and_hold_reasons_changed_with_raw_sql_are_in_their_queues_history(queue):
    other = make_queue("aml")
    with connection.cursor() as cursor:
        for q in (queue, other):
            cursor.execute(
                "INSERT INTO queue_app_checkpolicy (queue_id, verdict, path, threshold)"
                " VALUES (%s, 'approve', 'amount', 10000)",
                [q.pk],
            )
            cursor.execute(
                "INSERT INTO queue_app_holdreason (queue_id, code, label)"
                " VALUES (%s, 'docs', 'Awaiting documents')",
                [q.pk],
            )
        cursor.execute(
            "UPDATE queue_app_checkpolicy SET threshold = 5000 WHERE queue_id = %s", [queue.pk]
        )
        cursor.execute(
            "UPDATE queue_app_holdreason SET retired_at = '2026-11-30T12:00:00Z'"
            " WHERE queue_id = %s",
            [queue.pk],
        )
        cursor.execute("DELETE FROM queue_app_checkpolicy WHERE queue_id = %s", [queue.pk])
    policy = CheckPolicy.objects.get(queue=other)
    found = {(r.kind, r.action): r for r in rows(queue=queue)}
    assert {a for k, a in found if k == "check policy"} == {"created", "changed", "deleted"}
    assert {a for k, a in found if k == "hold reason"} == {"created", "changed"}
    assert all(
        r.by == DATABASE for r in found.values() if r.kind in ("check policy", "hold reason")
    )
    changed = found[("check policy", "changed")]
    assert changed.change == "threshold: 10000.00 → 5000.00"  # exact, as stored
    assert changed.subject.startswith("check policy #") and "of queue kyc" in changed.subject
    assert changed.subject.endswith("approve when amount ≥ 5000.00")
    assert found[("check policy", "deleted")].change.startswith(
        "machine_only=False, path=amount, queue_id="
    )
    retired = found[("hold reason", "changed")]
    assert retired.subject == f"hold reason docs of queue kyc (#{queue.pk})"
    assert retired.change == "retired_at: — → 2026-11-30T12:00:00+00:00"
    assert not any(f"#{policy.pk} " in r.subject for r in rows(queue=queue))  # aml's stays out
    assert any(f"#{policy.pk} " in r.subject for r in rows(queue=other))


def _queue_form(**fields) -> dict:
    return {
        "slug": "payments",
        "name": "Payment holds",
        "description": "",
        "lease_ttl": "00:15:00",
        "max_in_flight": "500",
        "escalation_threshold": "3",
        "escalation_queue": "",
        "effect": "log",
        "webhook_url": "",
        "webhook_secret_env": "",
        "release_skip": "00:15:00",
        "default_sla": "",
        "sla_warning": "04:00:00",
        "max_hold": "7 00:00:00",
        "qa_rate": "0",
        "evidence_rules-TOTAL_FORMS": "0",
        "evidence_rules-INITIAL_FORMS": "0",
        "hold_reasons-TOTAL_FORMS": "0",
        "hold_reasons-INITIAL_FORMS": "0",
        "check_policies-TOTAL_FORMS": "0",
        "check_policies-INITIAL_FORMS": "0",
        **fields,
    }


def test_admin_changes_to_new_settings_policies_and_hold_reasons_name_the_admin(root_client, root):
    trace = str(uuid.uuid4())
    created = root_client.post(
        "/admin/queue_app/queue/add/",
        _queue_form(
            **{
                "hold_reasons-TOTAL_FORMS": "1",
                "hold_reasons-0-code": "docs",
                "hold_reasons-0-label": "Awaiting documents",
                "check_policies-TOTAL_FORMS": "1",
                "check_policies-0-verdict": "reject",
            }
        ),
        headers={"X-Request-ID": trace},
    )
    assert created.status_code == 302, created.content[:3000]
    queue = Queue.objects.get(slug="payments")
    reason, policy = HoldReason.objects.get(queue=queue), CheckPolicy.objects.get(queue=queue)
    changed = root_client.post(
        f"/admin/queue_app/queue/{queue.pk}/change/",
        _queue_form(
            sensitive="on",
            default_sla="1 00:00:00",
            sla_warning="02:00:00",
            max_hold="3 00:00:00",
            qa_rate="5",
            **{
                "hold_reasons-TOTAL_FORMS": "1",
                "hold_reasons-INITIAL_FORMS": "1",
                "hold_reasons-0-id": reason.pk,
                "hold_reasons-0-queue": queue.pk,
                "hold_reasons-0-code": "docs",
                "hold_reasons-0-label": "Awaiting customer documents",
                "check_policies-TOTAL_FORMS": "1",
                "check_policies-INITIAL_FORMS": "1",
                "check_policies-0-id": policy.pk,
                "check_policies-0-queue": queue.pk,
                "check_policies-0-verdict": "reject",
                "check_policies-0-DELETE": "on",
            },
        ),
        headers={"X-Request-ID": trace},
    )
    assert changed.status_code == 302, changed.content[:3000]
    found = {(r.kind, r.action): r for r in rows(queue=queue)}
    for key in [
        ("queue configuration", "created"),
        ("queue configuration", "changed"),
        ("hold reason", "created"),
        ("hold reason", "changed"),
        ("check policy", "created"),
        ("check policy", "deleted"),
    ]:
        assert found[key].by == f"root (#{root.pk})", key
        assert found[key].trace_id == trace, key
    assert found[("queue configuration", "changed")].change == (
        "default_sla: — → 1 day; max_hold: 7 days → 3 days; "
        "qa_rate: 0.00 → 5.00; sensitive: False → True; sla_warning: 04:00:00 → 02:00:00"
    )
    assert found[("hold reason", "changed")].change == (
        "label: Awaiting documents → Awaiting customer documents"
    )
    assert found[("check policy", "deleted")].subject.endswith("reject always")

    page = root_client.get("/admin/access-history/", {"queue": "payments"}).content.decode()
    assert "hold reason docs of queue payments" in page
    assert "check policy #" in page
    assert "sensitive: False → True" in page
    export = root_client.get("/admin/access-history.csv", {"queue": "payments"})
    body = b"".join(export.streaming_content).decode()
    assert "check policy,deleted" in body
    assert "hold reason,changed" in body
