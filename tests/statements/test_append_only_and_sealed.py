"""Statements are append-only, and sealed: a statement altered afterwards fails verification."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.db import DatabaseError, connection, transaction

from queue_app.apply import apply_batch
from queue_app.chain import (
    merkle_root,
    root_from_path,
    seal_all,
    statement_inclusion_proof,
    verify_chain,
)
from queue_app.models import StatementEntry, StatementOfReasons
from tests.conftest import triggers_off
from tests.statements.conftest import decide

pytestmark = pytest.mark.django_db


@pytest.fixture
def statement(posts, alice) -> StatementOfReasons:
    decide(posts, alice, note="Phishing link.")
    apply_batch()
    return StatementOfReasons.objects.get()


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE queue_app_statementofreasons SET body = '{}'",
        "DELETE FROM queue_app_statementofreasons",
        "TRUNCATE queue_app_statementofreasons CASCADE",
    ],
)
def test_the_database_refuses_to_rewrite_a_statement(statement, sql):
    with connection.cursor() as cursor:
        # Fire the test transaction's deferred checks now: TRUNCATE refuses to run past them.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            cursor.execute(sql)
    assert StatementOfReasons.objects.get().body == statement.body


def test_a_statement_is_sealed_after_the_decisions_and_verifies(statement):
    seal_all()
    entry = StatementEntry.objects.get(statement=statement)
    assert entry.position == entry.batch.size - 1  # after the batch's decision
    assert verify_chain().ok
    proof = statement_inclusion_proof(statement.pk)
    assert proof is not None
    leaf = bytes.fromhex(str(proof["leaf"]))
    path = [bytes.fromhex(h) for h in proof["path"]]  # type: ignore[attr-defined]
    root = root_from_path(leaf, int(str(proof["index"])), int(str(proof["size"])), path)
    assert root.hex() == proof["root"]
    assert merkle_root([leaf]).hex() != proof["root"] or proof["size"] == 1


def test_a_statement_rewritten_with_its_hash_recomputed_is_detected(statement):
    seal_all()
    assert verify_chain().ok
    body = statement.statement
    body["decision_facts"] = "Something else entirely."
    forged = json.dumps(body, sort_keys=True, separators=(",", ":"))
    with triggers_off("queue_app_statementofreasons") as cursor:
        cursor.execute(
            "UPDATE queue_app_statementofreasons SET body = %s, sha256 = %s WHERE id = %s",
            [forged, hashlib.sha256(forged.encode()).hexdigest(), statement.pk],
        )
    result = verify_chain()
    assert not result.ok
    assert f"statement of reasons {statement.pk}" in result.message
    assert "altered" in result.message


def test_a_statement_taken_off_the_sealers_list_is_detected(statement):
    with triggers_off("queue_app_unsealedstatement") as cursor:
        cursor.execute("DELETE FROM queue_app_unsealedstatement")
    result = verify_chain()
    assert not result.ok
    assert f"statement of reasons {statement.pk}" in result.message
