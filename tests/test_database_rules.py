"""Rules the database enforces even when Python is bypassed: append-only, reasons, overturns."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction

from queue_app.chain import seal_all
from queue_app.models import AppliedDecision, Decision, ItemEvent, ReviewItem
from queue_app.services import claim_next, submit_decision
from tests.conftest import make_items, make_legacy, make_queue, shown_hash

pytestmark = pytest.mark.django_db


@pytest.fixture
def decision(queue, alice):
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
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE queue_app_decision DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE queue_app_decision SET verdict = 'reject', reason_code_id = "
            "(SELECT id FROM queue_app_reasoncode WHERE code = 'fraud' AND queue_id = %s) "
            "WHERE id = %s",
            [queue.pk, decision.pk],
        )
        cursor.execute("ALTER TABLE queue_app_decision ENABLE TRIGGER USER")
    with pytest.raises(CommandError, match=f"broken at decision {decision.pk}"):
        call_command("verify_decisions")


def test_recomputing_the_altered_rows_hash_breaks_the_next_link(queue, alice, decision):
    # Decisions from before sealing (migration 0010) carry a per-decision chain.
    make_items(queue, 1, prefix="next")
    item = claim_next(queue=queue, reviewer=alice)
    later = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
    )
    make_legacy([decision.pk, later.pk])
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE queue_app_decision DISABLE TRIGGER USER")
        cursor.execute("UPDATE queue_app_decision SET note = 'forged' WHERE id = %s", [decision.pk])
        # A careful forger recomputes the altered row's own hash ...
        cursor.execute(
            "UPDATE queue_app_decision d SET chain_hash = encode(sha256(convert_to("
            "'|' || queue_app_decision_chain_input(d), 'UTF8')), 'hex') WHERE id = %s",
            [decision.pk],
        )
        cursor.execute("ALTER TABLE queue_app_decision ENABLE TRIGGER USER")
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
