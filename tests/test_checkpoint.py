"""Signed checkpoints: the log must still extend what was anchored outside the database.

Each attack is carried out for real on this test database, with the append-only triggers
switched off the way an owner could: sealed batches cut off the end, and a decision rewritten
with every sealed leaf, root and batch hash recomputed. The plain chain check is fooled by
both; the checkpoint is not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from queue_app import chain_checkpoints
from queue_app.chain import SEAL_LOCK_KEY, batch_hash, merkle_root, seal_all
from queue_app.db.statements import chain as chain_sql
from queue_app.models import ChainBatch, Decision
from queue_app.services import claim_next
from tests.blocking import Session, wait_until_blocked_by_me
from tests.conftest import approve_as_shown, make_items, make_legacy, triggers_off

pytestmark = pytest.mark.django_db

PRIVATE, PUBLIC = chain_checkpoints.generate_key()


@pytest.fixture(autouse=True)
def _key(settings, tmp_path):
    settings.REVIEW_CHECKPOINT_KEY = PRIVATE
    settings.REVIEW_CHECKPOINT_PUBLIC_KEY = PUBLIC
    settings.REVIEW_CHECKPOINT_DIR = tmp_path / "checkpoints"
    settings.REVIEW_CHECKPOINT_WEBHOOK = ""


def decide(queue, reviewer, n: int, prefix: str) -> list[Decision]:
    make_items(queue, n, prefix=prefix)
    decisions = []
    for _ in range(n):
        item = claim_next(queue=queue, reviewer=reviewer)
        decisions.append(approve_as_shown(item, reviewer))
    return decisions


def write_checkpoint(tmp_path: Path) -> Path:
    path = tmp_path / "anchor.json"
    call_command("checkpoint", "--output", str(path))
    return path


def verify(path: Path, *extra: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("verify_decisions", "--checkpoint", str(path), *extra, stdout=out)
    return out.getvalue()


LOG_TABLES = (
    "queue_app_decision",
    "queue_app_applieddecision",
    "queue_app_chainentry",
    "queue_app_chainbatch",
)


def as_owner_without_triggers(statements: list[tuple[str, list]]) -> None:
    with triggers_off(*LOG_TABLES) as cursor:
        for statement, params in statements:
            cursor.execute(statement, params)


SEAL_TABLES = ("queue_app_chainentry", "queue_app_laneoutcomeentry", "queue_app_chainbatch")


def reseal_everything() -> None:
    """Recompute every sealed leaf, root and batch hash, as a careful forger would."""
    with triggers_off(*SEAL_TABLES) as cursor:
        cursor.execute(
            "UPDATE queue_app_chainentry AS e SET leaf = queue_app_decision_leaf(d) "
            "FROM queue_app_decision AS d WHERE d.id = e.decision_id"
        )
        cursor.execute(
            "UPDATE queue_app_laneoutcomeentry AS e SET leaf = queue_app_laneoutcome_leaf(o) "
            "FROM queue_app_laneoutcome AS o WHERE o.task_id = e.outcome_id"
        )
        previous = ""
        for batch in ChainBatch.objects.order_by("seq"):
            entries = [*batch.entries.values_list("position", "leaf")]
            entries += batch.outcome_entries.values_list("position", "leaf")
            leaves = [bytes.fromhex(leaf) for _, leaf in sorted(entries)]
            root = merkle_root(leaves).hex()
            new_hash = batch_hash(prev_hash=previous, seq=batch.seq, size=batch.size, root=root)
            cursor.execute(
                "UPDATE queue_app_chainbatch SET merkle_root = %s, prev_hash = %s, "
                "batch_hash = %s WHERE seq = %s",
                [root, previous, new_hash, batch.seq],
            )
            previous = new_hash


def test_the_checkpoint_seals_first_and_names_the_last_batch(queue, alice, tmp_path):
    decide(queue, alice, 3, "a")
    document = json.loads(write_checkpoint(tmp_path).read_text())
    [head] = document["chains"]
    batch = ChainBatch.objects.get()
    assert head == {"chain": "seals", "seq": 1, "hash": batch.batch_hash, "size": 3}
    assert document["public_key"] == PUBLIC
    assert len(document["signature"]) == 88  # 64 bytes, base64


@pytest.mark.django_db(transaction=True)
def test_a_checkpoint_waits_for_a_seal_round_at_work_instead_of_leaving_entries_out(
    queue, alice, tmp_path
):
    decide(queue, alice, 3, "a")  # committed: a sealer round on another connection sees them
    with transaction.atomic():
        # This connection is an apply worker's seal round that has taken the sealer's lock.
        with connection.cursor() as cursor:
            cursor.execute(chain_sql.TRY_SEAL_LOCK, {"key": SEAL_LOCK_KEY})
            assert cursor.fetchone()[0]
        other = Session(chain_checkpoints.make_checkpoint)
        other.start()
        wait_until_blocked_by_me(other)
    [head] = other.outcome()["chains"]
    assert head["size"] == 3 and ChainBatch.objects.get().batch_hash == head["hash"]


def test_a_log_that_grew_still_extends_the_checkpoint(queue, alice, tmp_path):
    decide(queue, alice, 2, "a")
    path = write_checkpoint(tmp_path)
    decide(queue, alice, 2, "b")
    assert "The log extends the checkpoint" in verify(path)


def test_an_empty_log_can_be_checkpointed(tmp_path):
    path = write_checkpoint(tmp_path)
    assert json.loads(path.read_text())["chains"] == []
    assert "(empty)" in verify(path)


def test_the_checkpoint_names_the_old_chain_too(queue, alice, tmp_path):
    decisions = decide(queue, alice, 2, "a")
    make_legacy([d.pk for d in decisions])
    document = json.loads(write_checkpoint(tmp_path).read_text())
    assert [h["chain"] for h in document["chains"]] == ["decisions"]
    last = Decision.objects.get(pk=decisions[-1].pk)
    assert document["chains"][0]["hash"] == last.chain_hash
    assert "extends" in verify(write_checkpoint(tmp_path))


def test_it_fails_when_rows_were_cut_off_the_end(queue, alice, tmp_path):
    decide(queue, alice, 2, "a")
    seal_all()
    cut = [d.pk for d in decide(queue, alice, 2, "b")]
    path = write_checkpoint(tmp_path)  # seals the last two as batch 2
    as_owner_without_triggers(
        [
            ("DELETE FROM queue_app_effectjob WHERE decision_id = ANY(%s)", [cut]),
            ("DELETE FROM queue_app_applieddecision WHERE decision_id = ANY(%s)", [cut]),
            ("DELETE FROM queue_app_chainentry WHERE decision_id = ANY(%s)", [cut]),
            ("DELETE FROM queue_app_chainbatch WHERE seq = 2", []),
            ("DELETE FROM queue_app_decision WHERE id = ANY(%s)", [cut]),
        ]
    )
    # The chain that is left is internally consistent: the plain check cannot tell.
    call_command("verify_decisions")
    with pytest.raises(CommandError, match="Truncated"):
        verify(path)


def test_it_fails_when_the_chain_was_rewritten_and_recomputed(queue, alice, tmp_path):
    decisions = decide(queue, alice, 3, "a")
    path = write_checkpoint(tmp_path)
    as_owner_without_triggers(
        [("UPDATE queue_app_decision SET note = 'forged' WHERE id = %s", [decisions[0].pk])]
    )
    with pytest.raises(CommandError, match=f"broken at decision {decisions[0].pk}"):
        call_command("verify_decisions")
    reseal_everything()
    call_command("verify_decisions")
    with pytest.raises(CommandError, match="Rewritten"):
        verify(path)


def test_it_fails_when_the_checkpoint_file_was_edited(queue, alice, tmp_path):
    decide(queue, alice, 2, "a")
    path = write_checkpoint(tmp_path)
    document = json.loads(path.read_text())
    document["chains"][0]["size"] -= 1
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError, match="signature does not verify"):
        verify(path)


def test_it_trusts_the_configured_key_not_the_one_in_the_file(queue, alice, tmp_path, settings):
    decide(queue, alice, 1, "a")
    forger_private, forger_public = chain_checkpoints.generate_key()
    settings.REVIEW_CHECKPOINT_KEY = forger_private
    path = write_checkpoint(tmp_path)
    assert json.loads(path.read_text())["public_key"] == forger_public
    settings.REVIEW_CHECKPOINT_KEY = PRIVATE
    with pytest.raises(CommandError, match="signature does not verify"):
        verify(path)
    # Naming the forger's key explicitly is the verifier's own choice, and then it verifies.
    assert "extends" in verify(path, "--public-key", forger_public)


def test_it_refuses_without_a_key(settings, tmp_path):
    settings.REVIEW_CHECKPOINT_KEY = ""
    with pytest.raises(CommandError, match="REVIEW_CHECKPOINT_KEY is not set"):
        call_command("checkpoint", "--output", str(tmp_path / "x.json"))
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "not JSON"),
        ('{"format": "other"}', "not a review-console-checkpoint/1"),
        (
            '{"format": "review-console-checkpoint/1", "chains": [{"chain": "decisions"}]}',
            "malformed",
        ),
        (
            '{"format": "review-console-checkpoint/1", "chains": [], "signature": "%%%"}',
            "signature does not verify",
        ),
    ],
)
def test_a_damaged_checkpoint_file_gets_a_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        verify(path)


def test_the_apply_worker_emits_checkpoints_on_its_schedule(queue, alice, settings, tmp_path):
    from queue_app.apply import RetryPolicy
    from queue_app.management.commands.run_apply_worker import ApplyWorker

    decide(queue, alice, 1, "a")
    worker = ApplyWorker(
        batch_size=10,
        poll_interval=1.0,
        escalate_every=0,
        checkpoint_every=3600,
        policy=RetryPolicy(),
        notify=False,
    )
    worker.drain()
    worker.drain()  # not due again for an hour: still one file
    files = list(settings.REVIEW_CHECKPOINT_DIR.glob("checkpoint-*.json"))
    assert len(files) == 1
    assert "extends" in verify(files[0])


def test_the_apply_worker_refuses_to_start_checkpointing_without_a_key(settings):
    settings.REVIEW_CHECKPOINT_KEY = ""
    with pytest.raises(CommandError, match="REVIEW_CHECKPOINT_KEY is not set"):
        call_command("run_apply_worker", "--once", "--checkpoint-every", "5")


def test_the_emit_option_writes_a_timestamped_file_for_a_timer(queue, alice, settings):
    decide(queue, alice, 1, "a")
    call_command("checkpoint", "--emit")
    [written] = settings.REVIEW_CHECKPOINT_DIR.glob("checkpoint-*.json")
    assert "extends" in verify(written)
