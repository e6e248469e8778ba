"""The audit export names each decision's link in the log: chained, sealed, or not sealed yet."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from queue_app.chain import inclusion_proof, seal_all
from queue_app.exports import export_lines
from queue_app.models import ChainEntry, Decision
from queue_app.services import claim_next
from tests.conftest import approve_as_shown, make_items, make_legacy

pytestmark = pytest.mark.django_db


def _jsonl() -> dict[int, dict]:
    rows = [json.loads(line) for line in export_lines(Decision.objects.all(), fmt="jsonl")]
    return {row["decision_id"]: row for row in rows}


def _decide(queue, alice, n: int) -> list[Decision]:
    make_items(queue, n)
    return [approve_as_shown(claim_next(queue=queue, reviewer=alice), alice) for _ in range(n)]


def test_it_fills_the_chain_columns_of_a_sealed_decision_from_its_batch(queue, alice):
    [decision] = _decide(queue, alice, 1)
    seal_all()

    row = _jsonl()[decision.pk]

    entry = ChainEntry.objects.select_related("batch").get(decision=decision)
    assert (row["chain_seq"], row["chain_hash"]) == (entry.batch.seq, entry.batch.batch_hash)
    assert row["chain_state"] == "sealed"
    assert (row["chain_position"], row["chain_leaf"]) == (entry.position, entry.leaf)
    # What the row names is what an inclusion proof checks against.
    proof = inclusion_proof(decision.pk)
    assert (proof["batch"], proof["batch_hash"], proof["leaf"]) == (
        row["chain_seq"],
        row["chain_hash"],
        row["chain_leaf"],
    )


def test_it_marks_a_decision_the_sealer_has_not_reached(queue, alice):
    [decision] = _decide(queue, alice, 1)

    row = _jsonl()[decision.pk]
    assert row["chain_state"] == "unsealed"
    assert (row["chain_seq"], row["chain_hash"], row["chain_leaf"]) == (None, None, None)
    [header, line] = list(
        csv.reader(io.StringIO("".join(export_lines(Decision.objects.all(), fmt="csv"))))
    )
    assert dict(zip(header, line, strict=True))["chain_state"] == "unsealed"


def test_it_keeps_the_link_of_a_decision_from_the_per_decision_chain(queue, alice):
    old, new = _decide(queue, alice, 2)
    make_legacy([old.pk])
    seal_all()

    rows = _jsonl()
    legacy = Decision.objects.get(pk=old.pk)
    assert rows[old.pk]["chain_state"] == "chained"
    assert (rows[old.pk]["chain_seq"], rows[old.pk]["chain_hash"]) == (
        legacy.chain_seq,
        legacy.chain_hash,
    )
    assert rows[new.pk]["chain_state"] == "sealed"


def test_the_demos_decisions_are_sealed_in_the_export(monkeypatch, capsys):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=20)

    rows = list(_jsonl().values())
    assert rows
    assert all(row["chain_seq"] is not None and row["chain_hash"] for row in rows)
    assert {row["chain_state"] for row in rows} == {"sealed"}
