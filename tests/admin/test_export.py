"""export_decisions and the admin export action: every field round-trips."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from queue_app.apply import apply_one
from queue_app.chain import seal_all
from queue_app.exports import COLUMNS
from queue_app.models import AppliedDecision, ChainEntry, Decision, DecisionStory
from queue_app.services import claim_next, create_item, overturn_decision, submit_decision
from tests.admin.conftest import client_for, decide
from tests.conftest import make_items, make_queue, shown_hash
from tests.test_database_rules import insert_unnamed_decision

pytestmark = pytest.mark.django_db

NULLABLE = {
    "supersedes",
    "corrected_verdict",
    "applied_at",
    "chain_hash",
    "chain_leaf",
    "suggestion_view",
}


@pytest.fixture
def history(queue, alice, bob, compliance, reviewers_group) -> list[Decision]:
    first, _ = make_items(queue, 2, prefix="Applicant")
    approved = decide(first, alice)
    assert apply_one()  # the worker carries it out: the only applied_at in this history
    claimed = claim_next(queue=queue, reviewer=bob)
    rejected = submit_decision(
        item_id=claimed.pk,
        reviewer=bob,
        lease_token=claimed.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(claimed),
        note='Forged "MRZ", see\nline 2; naïve, €12.50',
    )
    seal_all()  # the first two sealed, the rest waiting for the sealer
    overturn = overturn_decision(
        decision_id=approved.pk,
        admin=compliance,
        corrected_verdict="reject",
        reason_code="reviewer_error",
        note="Expired passport",
    )
    other = make_queue("recon", group=reviewers_group)
    (third,) = make_items(other, 1)
    elsewhere = decide(third, alice)
    return [approved, rejected, overturn, elsewhere]


def expected(decision: Decision) -> dict:
    """Every exported field, read straight from the model (not through the export code)."""
    decision = Decision.objects.select_related("item", "queue", "reviewer", "reason_code").get(
        pk=decision.pk
    )
    applied = AppliedDecision.objects.filter(decision=decision).first()
    return {
        "decision_id": decision.pk,
        "created_at": decision.created_at,
        "queue": decision.queue.slug,
        "item_id": decision.item_id,
        "item_subject": decision.item.subject,
        "trace_id": str(decision.item.trace_id),
        "reviewer": decision.reviewer_username,
        "reviewer_id": decision.reviewer_id,
        "verdict": decision.verdict,
        "reason_code": decision.reason_code.code,
        "evidence_hash": decision.evidence_hash,
        "note": decision.note,
        "supersedes": decision.supersedes_id,
        "corrected_verdict": decision.corrected_verdict,
        **_link(decision),
        "applied_at": applied.applied_at if applied else None,
        "attachments": " ".join(
            f"{name}={entry['sha256']}" for name, entry in sorted(decision.item.attachments.items())
        ),
        "status": DecisionStory.objects.get(pk=decision.pk).status,
        "suggestion_view": decision.suggestion_view,
        "suggestion_shown_at": decision.suggestion_shown_at,
        "suggestion_followed": decision.suggestion_followed,
    }


def _link(decision: Decision) -> dict:
    """The chain columns: the decision's sealed entry, or empty and marked while unsealed."""
    entry = ChainEntry.objects.select_related("batch").filter(decision=decision).first()
    if entry is None:
        return dict.fromkeys(("chain_seq", "chain_hash", "chain_position", "chain_leaf")) | {
            "chain_state": "unsealed"
        }
    return {
        "chain_seq": entry.batch.seq,
        "chain_hash": entry.batch.batch_hash,
        "chain_position": entry.position,
        "chain_leaf": entry.leaf,
        "chain_state": "sealed",
    }


def _from_text(row: dict) -> dict:
    """Turn an exported row (all text in CSV) back into typed values."""
    out = dict(row)
    for key in (
        "decision_id",
        "item_id",
        "reviewer_id",
        "supersedes",
        "chain_seq",
        "chain_position",
    ):
        out[key] = int(out[key]) if out[key] not in (None, "") else None
    for key in ("created_at", "applied_at", "suggestion_shown_at"):
        out[key] = datetime.fromisoformat(out[key]) if out[key] else None
    if isinstance(out["suggestion_followed"], str):
        out["suggestion_followed"] = {"True": True, "False": False}.get(out["suggestion_followed"])
    for key in NULLABLE:
        out[key] = out[key] if out[key] != "" else None
    return out


def _export(tmp_path, *args: str) -> str:
    path = tmp_path / "out"
    call_command("export_decisions", *args, "--output", str(path))
    return path.read_bytes().decode("utf-8")  # as written: no newline translation


def test_jsonl_round_trips_every_field(history, tmp_path):
    lines = _export(tmp_path, "--format", "jsonl").splitlines()
    rows = [_from_text(json.loads(line)) for line in lines]
    assert rows == [expected(d) for d in history]
    assert all(list(json.loads(line)) == list(COLUMNS) for line in lines)
    assert rows[0]["applied_at"] is not None
    assert rows[2]["supersedes"] == history[0].pk
    assert rows[2]["corrected_verdict"] == "reject"
    # What became of each, as every other surface says it (queue_app/models/story.py).
    assert [row["status"] for row in rows] == ["overturned", "pending", "pending", "pending"]


def test_csv_round_trips_every_field(history, tmp_path):
    reader = csv.DictReader(io.StringIO(_export(tmp_path, "--format", "csv")))
    assert tuple(reader.fieldnames) == COLUMNS
    rows = [_from_text(row) for row in reader]
    assert rows == [expected(d) for d in history]
    assert rows[1]["note"] == 'Forged "MRZ", see\nline 2; naïve, €12.50'


# Real commits, so each decision gets its own created_at (now() is per transaction).
@pytest.mark.django_db(transaction=True)
def test_it_filters_by_queue_and_time(history, tmp_path):
    recon = _export(tmp_path, "--queue", "recon").splitlines()
    assert [json.loads(line)["decision_id"] for line in recon] == [history[3].pk]
    boundary = Decision.objects.get(pk=history[2].pk).created_at.isoformat()
    before = _export(tmp_path, "--until", boundary).splitlines()
    assert [json.loads(line)["decision_id"] for line in before] == [d.pk for d in history[:2]]
    after = _export(tmp_path, "--since", boundary).splitlines()
    assert [json.loads(line)["decision_id"] for line in after] == [d.pk for d in history[2:]]
    assert _export(tmp_path, "--since", "2999-01-01") == ""


def test_it_writes_to_standard_output(history, capsys):
    call_command("export_decisions", "--queue", "recon")
    assert json.loads(capsys.readouterr().out)["decision_id"] == history[3].pk


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "last tuesday"], "Not a date or date-time: last tuesday"),
        (["--since", "2026-02-01", "--until", "2026-01-01"], "--since must be earlier"),
        (["--queue", "nope"], "No queue with slug 'nope'"),
    ],
)
def test_it_refuses_bad_arguments_clearly(db, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("export_decisions", *args)


def test_the_admin_action_streams_the_filtered_selection(history, compliance, tmp_path):
    response = client_for(compliance).post(
        reverse("admin:queue_app_decision_changelist") + f"?queue__id__exact={history[0].queue_id}",
        {"action": "export_csv", "select_across": "1", "index": "0", "_selected_action": "0"},
    )
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "attachment;" in response["Content-Disposition"]
    body = b"".join(response.streaming_content).decode()
    assert body == _export(tmp_path, "--format", "csv", "--queue", "kyc")
    assert len(list(csv.DictReader(io.StringIO(body)))) == 3


FORMULAS = ['=HYPERLINK("http://evil","x")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)"]


def _decided_with(queue, alice, subject: str, note: str) -> Decision:
    item, _ = create_item(
        queue=queue, subject=subject, payload={}, idempotency_key=f"k-{len(subject)}-{note!r}"
    )
    claimed = claim_next(queue=queue, reviewer=alice)
    assert claimed.pk == item.pk
    return submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(claimed),
        note=note,
    )


def _csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_csv_cells_a_spreadsheet_would_run_as_formulas_arrive_as_text(queue, alice, tmp_path):
    cases = [*FORMULAS, "\t=1+1", "\r=1+1"]
    for i, text in enumerate(cases):
        _decided_with(queue, alice, subject=text, note=cases[-1 - i])
    rows = _csv_rows(_export(tmp_path, "--format", "csv"))
    assert [row["item_subject"] for row in rows] == ["'" + text for text in cases]
    assert [row["note"] for row in rows] == ["'" + text for text in reversed(cases)]
    # Nothing else in those rows starts like a formula, and ids stay plain numbers.
    for row in rows:
        assert int(row["decision_id"]) > 0
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values())


def test_jsonl_keeps_formula_like_text_exact(queue, alice, tmp_path):
    _decided_with(queue, alice, subject=FORMULAS[0], note=FORMULAS[1])
    (row,) = [json.loads(line) for line in _export(tmp_path, "--format", "jsonl").splitlines()]
    assert (row["item_subject"], row["note"]) == (FORMULAS[0], FORMULAS[1])


def test_csv_leaves_ordinary_text_alone(queue, alice, tmp_path):
    _decided_with(queue, alice, subject="O'Brien - 2 = fine", note="a=b, c+d")
    (row,) = _csv_rows(_export(tmp_path, "--format", "csv"))
    assert (row["item_subject"], row["note"]) == ("O'Brien - 2 = fine", "a=b, c+d")


def test_a_carriage_return_inside_a_cell_does_not_split_the_row(queue, alice, tmp_path):
    _decided_with(queue, alice, subject="line one\rline two", note="typed\r\nin a browser")
    (row,) = _csv_rows(_export(tmp_path, "--format", "csv"))
    assert (row["item_subject"], row["note"]) == ("line one\rline two", "typed\r\nin a browser")


def _rename(user, username: str) -> None:
    user.username = username
    user.save(update_fields=["username"])


def test_a_renamed_reviewer_keeps_their_decisions_under_the_name_they_had(
    history, alice, bob, compliance, tmp_path
):
    # Alice and Bob swap usernames (through a third name, usernames being unique).
    _rename(alice, "tmp")
    _rename(bob, "alice")
    _rename(alice, "bob")
    for fmt in ("jsonl", "csv"):
        text = _export(tmp_path, "--format", fmt)
        rows = (
            [json.loads(line) for line in text.splitlines()]
            if fmt == "jsonl"
            else list(csv.DictReader(io.StringIO(text, newline="")))
        )
        assert [(row["reviewer"], str(row["reviewer_id"])) for row in rows] == [
            ("alice", str(alice.pk)),
            ("bob", str(bob.pk)),
            ("casey", str(compliance.pk)),
            ("alice", str(alice.pk)),
        ]


def test_the_timeline_names_the_reviewer_as_they_were_and_who_they_are_now(
    approved, alice, compliance
):
    _rename(alice, "alice.renamed")
    page = client_for(compliance).get(
        reverse("admin:queue_app_reviewitem_change", args=[approved.item_id])
    )
    text = page.content.decode()
    assert f"alice, user #{alice.pk}, since renamed alice.renamed" in text
    assert f"by alice (user #{alice.pk})" in text  # the standing-outcome line


def test_a_decision_from_before_the_snapshot_is_exported_under_todays_name(queue, alice, tmp_path):
    (item,) = make_items(queue, 1)
    insert_unnamed_decision(item, alice)
    _rename(alice, "alice.renamed")
    (row,) = [json.loads(line) for line in _export(tmp_path).splitlines()]
    assert (row["reviewer"], row["reviewer_id"]) == ("alice.renamed", alice.pk)
