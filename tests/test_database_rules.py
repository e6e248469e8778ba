"""Rules the database enforces even when Python is bypassed: append-only, reasons, overturns."""

from __future__ import annotations

import importlib
import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction

from queue_app.api.auth import issue_api_client
from queue_app.chain import seal_all
from queue_app.models import (
    ApiClient,
    AppliedDecision,
    Decision,
    ItemEvent,
    ReasonCode,
    ReviewItem,
)
from queue_app.services import claim_batch, claim_next, overturn_decision, submit_decision
from tests.conftest import (
    approve_as_shown,
    make_items,
    make_legacy,
    make_queue,
    run_in_threads,
    shown_hash,
    triggers_off,
    with_overturn_permission,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def decision(queue, alice):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    return approve_as_shown(item, alice)


def _refused(sql: str, params=()) -> None:
    with (
        pytest.raises(IntegrityError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        # The test runs inside a transaction with deferred foreign-key checks pending;
        # PostgreSQL would refuse TRUNCATE for that reason before reaching our trigger.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(sql, params)


def test_the_connection_is_the_table_owner():
    # The refusals below would prove little if the tests ran as a role without the privilege.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tableowner = current_user FROM pg_tables WHERE tablename = 'queue_app_decision'"
        )
        assert cursor.fetchone()[0] is True


def test_orm_update_and_delete_of_a_decision_fail(decision):
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        Decision.objects.filter(pk=decision.pk).update(note="rewritten")
    # delete() is stopped by Django first (protected foreign keys); a delete that skips the
    # collector goes straight to the database, which refuses it.
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.filter(pk=decision.pk).delete()
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        Decision.objects.filter(pk=decision.pk)._raw_delete(using="default")
    decision.note = "rewritten"
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        decision.save()
    assert Decision.objects.get(pk=decision.pk).note == ""


def test_raw_update_delete_truncate_of_decisions_fail(decision):
    _refused("UPDATE queue_app_decision SET verdict = 'reject'")
    _refused("DELETE FROM queue_app_decision")
    _refused("TRUNCATE queue_app_decision CASCADE")
    assert Decision.objects.filter(pk=decision.pk, verdict="approve").exists()


def test_applied_decisions_and_events_are_append_only(decision):
    AppliedDecision.objects.create(decision=decision)
    _refused("UPDATE queue_app_applieddecision SET applied_at = now()")
    _refused("DELETE FROM queue_app_applieddecision")
    _refused("TRUNCATE queue_app_applieddecision")
    _refused("UPDATE queue_app_itemevent SET kind = 'claimed'")
    _refused("DELETE FROM queue_app_itemevent")
    assert ItemEvent.objects.count() >= 3


def test_verify_decisions_passes_on_an_intact_chain(decision, capsys):
    call_command("verify_decisions")
    assert "1 decisions intact" in capsys.readouterr().out


def test_verify_decisions_names_a_row_altered_with_triggers_disabled(queue, alice, decision):
    make_items(queue, 2, prefix="more")
    for _ in range(2):
        item = claim_next(queue=queue, reviewer=alice)
        submit_decision(
            item_id=item.pk,
            reviewer=alice,
            lease_token=item.lease_token,
            verdict="reject",
            reason_code="fraud",
            evidence_hash=shown_hash(item),
        )
    seal_all()
    with triggers_off("queue_app_decision") as cursor:
        cursor.execute(
            "UPDATE queue_app_decision SET verdict = 'reject', reason_code_id = "
            "(SELECT id FROM queue_app_reasoncode WHERE code = 'fraud' AND queue_id = %s) "
            "WHERE id = %s",
            [queue.pk, decision.pk],
        )
    with pytest.raises(CommandError, match=f"broken at decision {decision.pk}"):
        call_command("verify_decisions")


def test_recomputing_the_altered_rows_hash_breaks_the_next_link(queue, alice, decision):
    # Decisions from before sealing carry a per-decision chain.
    make_items(queue, 1, prefix="next")
    item = claim_next(queue=queue, reviewer=alice)
    later = approve_as_shown(item, alice)
    make_legacy([decision.pk, later.pk])
    with triggers_off("queue_app_decision") as cursor:
        cursor.execute("UPDATE queue_app_decision SET note = 'forged' WHERE id = %s", [decision.pk])
        # A careful forger recomputes the altered row's own hash ...
        cursor.execute(
            "UPDATE queue_app_decision d SET chain_hash = encode(sha256(convert_to("
            "'|' || queue_app_decision_chain_input(d), 'UTF8')), 'hex') WHERE id = %s",
            [decision.pk],
        )
    # ... and the next link gives it away.
    with pytest.raises(CommandError, match=f"broken at decision {later.pk}"):
        call_command("verify_decisions")


def _insert_decision(item, reviewer, *, reason_id, verdict="approve", queue_id=None, **extra):
    cols = {
        "item_id": item.pk,
        "queue_id": queue_id or item.queue_id,
        "reviewer_id": reviewer.pk,
        "verdict": verdict,
        "reason_code_id": reason_id,
        "evidence_hash": "a" * 64,
        "note": "",
        "created_at": "now()",
        "chain_hash": "",
        **extra,
    }
    names = ", ".join(cols)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO queue_app_decision ({names}) VALUES "
            f"({', '.join('now()' if v == 'now()' else '%s' for v in cols.values())})",
            [v for v in cols.values() if v != "now()"],
        )


def test_a_reason_code_outside_the_verdict_is_refused_by_the_database(queue, alice):
    item = make_items(queue, 1)[0]
    fraud = queue.reason_codes.get(code="fraud")  # a reject reason
    with pytest.raises(IntegrityError, match="decision_reason_matches_queue_and_verdict"):
        _insert_decision(item, alice, reason_id=fraud.pk, verdict="approve")


def test_a_reason_code_of_another_queue_is_refused_by_the_database(queue, reviewers_group, alice):
    other = make_queue("other", group=reviewers_group)
    item = make_items(queue, 1)[0]
    foreign = other.reason_codes.get(code="verified")
    with pytest.raises(IntegrityError, match="decision_reason_matches_queue_and_verdict"):
        _insert_decision(item, alice, reason_id=foreign.pk)
    # Nor can the decision claim the other queue to make the reason fit.
    with pytest.raises(IntegrityError, match="decision_item_in_queue"):
        _insert_decision(item, alice, reason_id=foreign.pk, queue_id=other.pk)


def test_overturn_columns_are_set_iff_the_verdict_is_overturn(queue, bob, decision):
    # Else decision_overturn_permission refuses the first row before the columns are checked.
    bob = with_overturn_permission(bob)
    item = decision.item
    overturn_reason = queue.reason_codes.get(code="reviewer_error")
    with pytest.raises(IntegrityError, match="decision_overturn_columns"):
        _insert_decision(item, bob, reason_id=overturn_reason.pk, verdict="overturn")
    with pytest.raises(IntegrityError, match="decision_overturn_columns"):
        _insert_decision(
            item,
            bob,
            reason_id=queue.reason_codes.get(code="verified").pk,
            supersedes_id=decision.pk,
            corrected_verdict="reject",
        )


def test_one_reviewer_verdict_per_item(queue, alice, decision):
    with pytest.raises(IntegrityError, match="decision_one_per_item"):
        _insert_decision(decision.item, alice, reason_id=queue.reason_codes.get(code="verified").pk)


def test_lease_columns_must_match_state(queue):
    item = make_items(queue, 1)[0]
    with (
        pytest.raises(IntegrityError, match="item_lease_columns_match_state"),
        transaction.atomic(),
    ):
        ReviewItem.objects.filter(pk=item.pk).update(state="leased")
    with pytest.raises(IntegrityError, match="item_state_valid"), transaction.atomic():
        ReviewItem.objects.filter(pk=item.pk).update(state="done")


def test_idempotency_key_is_unique(queue):
    item = make_items(queue, 1)[0]
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewItem.objects.create(queue=queue, subject="dup", idempotency_key=item.idempotency_key)


def test_the_database_refuses_an_overturn_by_the_decisions_author(queue, alice, decision):
    reason = queue.reason_codes.get(code="reviewer_error")
    with pytest.raises(IntegrityError, match="four eyes"):
        _insert_decision(
            decision.item,
            alice,
            reason_id=reason.pk,
            verdict="overturn",
            supersedes_id=decision.pk,
            corrected_verdict="reject",
        )


def test_the_database_refuses_an_overturn_by_any_author_in_the_chain(
    queue, alice, supervisor, decision
):
    # Alice approved, Sam overturned; Alice writing an overturn of Sam's overturn is refused
    # even by a writer that skips the service.
    sams = overturn_decision(
        decision_id=decision.pk,
        admin=supervisor,
        corrected_verdict="reject",
        reason_code="reviewer_error",
    )
    reason = queue.reason_codes.get(code="reviewer_error")
    with pytest.raises(IntegrityError, match=f"four eyes.*decision {decision.pk} is theirs"):
        _insert_decision(
            decision.item,
            alice,
            reason_id=reason.pk,
            verdict="overturn",
            supersedes_id=sams.pk,
            corrected_verdict="approve",
        )
    assert Decision.objects.filter(item=decision.item).count() == 2


def test_the_database_refuses_an_overturn_by_someone_without_can_overturn(
    queue, bob, reviewers_group, decision
):
    reason = queue.reason_codes.get(code="reviewer_error")
    overturn = {
        "reason_id": reason.pk,
        "verdict": "overturn",
        "supersedes_id": decision.pk,
        "corrected_verdict": "reject",
    }
    with pytest.raises(IntegrityError, match=r"overturn permission: user \d+ .* can_overturn"):
        _insert_decision(decision.item, bob, **overturn)
    # Held through a group, the permission counts; a deactivated superuser's does not.
    root = User.objects.create_superuser("root", password="pw-root")
    User.objects.filter(pk=root.pk).update(is_active=False)
    with pytest.raises(IntegrityError, match="overturn permission"):
        _insert_decision(decision.item, root, **overturn)
    reviewers_group.permissions.add(Permission.objects.get(codename="can_overturn"))
    _insert_decision(decision.item, bob, **overturn)
    assert Decision.objects.get(supersedes=decision).reviewer_id == bob.pk


def test_the_database_counts_an_api_clients_decision_as_its_creators(queue, supervisor, bob):
    robot, _ = issue_api_client(name="robot", can_adjudicate=True, queues=[queue])
    ApiClient.objects.filter(pk=robot.pk).update(created_by=supervisor)
    make_items(queue, 1)
    (item,) = claim_batch(queue=queue, worker=robot.user, n=1, ttl=timedelta(minutes=1))
    robots = approve_as_shown(item, robot.user)
    reason = queue.reason_codes.get(code="reviewer_error")
    overturn = {
        "reason_id": reason.pk,
        "verdict": "overturn",
        "supersedes_id": robots.pk,
        "corrected_verdict": "reject",
    }
    with pytest.raises(IntegrityError, match="four eyes"):
        _insert_decision(robots.item, supervisor, **overturn)
    _insert_decision(robots.item, with_overturn_permission(bob), **overturn)  # anyone else may
    assert Decision.objects.filter(supersedes=robots, reviewer=bob).exists()


def _update_reason(reason_id: int, assignment: str) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE queue_app_reasoncode SET {assignment} WHERE id = %s", [reason_id])


def test_a_used_reason_codes_wording_and_meaning_are_frozen_by_the_database(queue, decision):
    verified = ReasonCode.objects.get(pk=decision.reason_code_id)
    for assignment in (
        "label = 'Fraud confirmed'",
        "code = 'renamed'",
        "queue_id = (SELECT id FROM queue_app_queue WHERE slug = 'escalation')",
    ):
        with pytest.raises(IntegrityError, match="used by decisions: its label, code"):
            _update_reason(verified.pk, assignment)
    # Retiring stays possible, and so does saving the row unchanged (as the admin does).
    _update_reason(verified.pk, "retired_at = now(), label = label")
    verified.refresh_from_db()
    assert (verified.label, verified.code, verified.queue_id) == ("verified", "verified", queue.pk)
    assert verified.retired_at is not None


def test_an_unused_reason_codes_label_can_change(queue, decision):
    unused = queue.reason_codes.get(code="within_tolerance")
    _update_reason(unused.pk, "label = 'Within tolerance'")
    unused.refresh_from_db()
    assert unused.label == "Within tolerance"


def test_the_database_records_the_reviewers_username_whatever_the_writer_sends(
    queue, alice, bob, decision
):
    assert decision.reviewer_username == "alice"  # RETURNING: filled in the insert itself
    bob = with_overturn_permission(bob)
    reason = queue.reason_codes.get(code="reviewer_error")
    _insert_decision(
        decision.item,
        bob,
        reason_id=reason.pk,
        verdict="overturn",
        supersedes_id=decision.pk,
        corrected_verdict="reject",
        reviewer_username="alice",
    )
    assert Decision.objects.get(supersedes=decision).reviewer_username == "bob"


# Migration 0002's link input, verbatim: what every decision written before 0007 was hashed with.
CHAIN_INPUT_0002 = """concat_ws('|', d.chain_seq, d.id, d.item_id, d.queue_id, d.reviewer_id,
    d.verdict, d.reason_code_id, d.evidence_hash, md5(d.note), d.supersedes_id,
    d.corrected_verdict, d.lease_token,
    to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))"""


def insert_unnamed_decision(item: ReviewItem, reviewer, reason_code: str = "verified") -> int:
    """Write a decision as the database did before names were recorded (no username, first hash).

    Triggers off for this insert alone (as a restore from an old dump would be), so the row
    carries exactly what the old trigger wrote; returns its id.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        try:
            cursor.execute(
                "INSERT INTO queue_app_decision (item_id, queue_id, reviewer_id, verdict,"
                " reason_code_id, evidence_hash, note, created_at, chain_seq, chain_hash)"
                " SELECT %s, %s, %s, 'approve', r.id, %s, 'old row', now(),"
                "  coalesce((SELECT max(chain_seq) FROM queue_app_decision), 0) + 1, ''"
                " FROM queue_app_reasoncode r"
                " WHERE r.queue_id = %s AND r.verdict = 'approve' AND r.code = %s"
                " RETURNING id",
                [item.pk, item.queue_id, reviewer.pk, "b" * 64, item.queue_id, reason_code],
            )
            decision_id = cursor.fetchone()[0]
            cursor.execute(
                "UPDATE queue_app_decision AS d SET chain_hash = encode(sha256(convert_to("
                " coalesce((SELECT p.chain_hash FROM queue_app_decision p"
                "           WHERE p.chain_seq = d.chain_seq - 1), '')"
                f" || '|' || {CHAIN_INPUT_0002}, 'UTF8')), 'hex') WHERE d.id = %s",
                [decision_id],
            )
        finally:
            cursor.execute("SET session_replication_role = DEFAULT")
    return decision_id


def test_verify_decisions_passes_on_rows_from_before_and_after_the_username_snapshot(
    queue, alice, bob, capsys
):
    # Claims take the oldest items first: the old rows go on the two newest.
    *_, third, fourth = make_items(queue, 4)
    old = insert_unnamed_decision(fourth, alice)
    for reviewer in (bob, alice):
        item = claim_next(queue=queue, reviewer=reviewer)
        approve_as_shown(item, reviewer)
    newer = insert_unnamed_decision(third, bob)  # an old dump's row after new ones: no matter
    stored = dict(Decision.objects.values_list("pk", "reviewer_username"))
    assert stored[old] is None and stored[newer] is None
    assert sorted(name for name in stored.values() if name) == ["alice", "bob"]
    call_command("verify_decisions")
    assert "4 decisions intact" in capsys.readouterr().out


@pytest.mark.parametrize("forged", ["'bob'", "NULL"])
def test_verify_decisions_names_a_decision_whose_recorded_reviewer_was_altered(
    queue, alice, decision, forged
):
    seal_all()
    with triggers_off("queue_app_decision") as cursor:
        cursor.execute(
            f"UPDATE queue_app_decision SET reviewer_username = {forged} WHERE id = %s",
            [decision.pk],
        )
    with pytest.raises(CommandError, match=f"broken at decision {decision.pk}"):
        call_command("verify_decisions")


@pytest.mark.django_db(transaction=True)
def test_a_label_edit_racing_the_codes_first_decision_waits_for_it_and_is_refused(queue, alice):
    # The decision is inserted but not yet committed when the edit arrives: the edit must not
    # slip in before the commit (the decision would then show wording nobody chose for it).
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    verified = queue.reason_codes.get(code="verified")
    decided, edit_over = threading.Event(), threading.Event()
    editor_pid: list[int] = []

    def run(i: int) -> str:
        if i == 0:
            with transaction.atomic():  # outermost: the decision stays uncommitted in here
                approve_as_shown(item, alice)
                decided.set()
                _wait_until_blocked_or_done(editor_pid, edit_over)
            return "committed"
        assert decided.wait(30)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            editor_pid.append(cursor.fetchone()[0])
        try:
            _update_reason(verified.pk, "label = 'Fraud confirmed'")
        except IntegrityError as exc:
            return str(exc).splitlines()[0]
        finally:
            edit_over.set()
        return "changed"

    _, edit = run_in_threads(2, run)
    assert "is used by decisions" in edit
    verified.refresh_from_db()
    assert verified.label == "verified"


def _wait_until_blocked_or_done(pid: list[int], done: threading.Event) -> None:
    """Return once the other connection waits on a lock, or has finished without waiting."""
    with connection.cursor() as cursor:
        for _ in range(3000):  # a bound, not a timing assertion: it returns as soon as it knows
            if done.wait(0.01):
                return
            if not pid:
                continue
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", pid)
            if cursor.fetchone()[0] == "Lock":
                return
    raise AssertionError("the label edit neither finished nor waited")


def test_migration_0007_credits_existing_clients_to_the_admin_who_created_them(queue, supervisor):
    from django.contrib.admin.models import ADDITION, LogEntry
    from django.contrib.contenttypes.models import ContentType

    migration = importlib.import_module("queue_app.migrations.0007_decision_audit")
    logged, _ = issue_api_client(name="from-the-admin", queues=[queue])
    issue_api_client(name="from-a-script", queues=[queue])
    LogEntry.objects.create(
        user=supervisor,
        content_type=ContentType.objects.get_for_model(ApiClient),
        object_id=str(logged.pk),
        object_repr=str(logged),
        action_flag=ADDITION,
    )
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKFILL_CREATED_BY)
    creators = dict(ApiClient.objects.values_list("name", "created_by"))
    assert creators == {"from-the-admin": supervisor.pk, "from-a-script": None}
