"""The sealed chain: no lock on the decision path, every committed decision sealed once, and
verification over the old per-decision chain and the new batches together."""

from __future__ import annotations

import json
import threading
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from queue_app.chain import (
    SealRefused,
    inclusion_path,
    merkle_root,
    root_from_path,
    seal_all,
    seal_pending,
    verify_chain,
)
from queue_app.models import ChainBatch, ChainEntry, Decision, UnsealedDecision
from queue_app.services import claim_next
from tests.conftest import (
    approve_as_shown,
    make_items,
    make_legacy,
    make_queue,
    run_in_threads,
    triggers_off,
)

# The module's tests use the database in a transaction each, except those marked transaction=True
# (real commits on separate connections).
pytestmark = pytest.mark.django_db

LEAVES = [bytes([i]) * 32 for i in range(20)]


def decide_one(queue, reviewer, prefix: str) -> Decision:
    make_items(queue, 1, prefix=prefix)
    item = claim_next(queue=queue, reviewer=reviewer)
    return approve_as_shown(item, reviewer)


# -- Merkle trees -------------------------------------------------------------------------------


def test_a_tree_of_two_hashes_its_two_leaves_with_the_node_prefix():
    import hashlib

    assert merkle_root(LEAVES[:2]) == hashlib.sha256(b"\x01" + LEAVES[0] + LEAVES[1]).digest()
    assert merkle_root(LEAVES[:1]) == LEAVES[0]


@pytest.mark.parametrize("size", range(1, 21))
def test_every_leaf_proves_its_inclusion_in_trees_of_any_size(size):
    leaves = LEAVES[:size]
    root = merkle_root(leaves)
    for index in range(size):
        path = inclusion_path(leaves, index)
        assert root_from_path(leaves[index], index, size, path) == root
        if path:
            forged = [b"\xff" * 32, *path[1:]]
            assert root_from_path(leaves[index], index, size, forged) != root


# -- the decision path holds no chain lock ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_decision_commits_while_another_decisions_transaction_is_open(
    queue, alice, bob, reviewers_group
):
    # Under the old trigger every insert took one advisory lock until its commit: the second
    # decision below would wait for the first transaction and fail on lock_timeout (2 s).
    other = make_queue("payments", group=reviewers_group)
    make_items(queue, 1, prefix="held")
    held_item = claim_next(queue=queue, reviewer=alice)
    inserted, finish = threading.Event(), threading.Event()

    def hold_an_uncommitted_decision(i: int) -> int | None:
        if i == 1:
            assert inserted.wait(30)
            try:
                # Same queue and another queue, while the first insert is uncommitted.
                return decide_one(queue, bob, "same").pk + decide_one(other, bob, "other").pk
            finally:
                finish.set()
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO queue_app_decision (item_id, queue_id, reviewer_id, verdict, "
                    "reason_code_id, evidence_hash, note, created_at, chain_hash) SELECT %s, %s, "
                    "%s, 'approve', id, repeat('a', 64), '', now(), '' FROM queue_app_reasoncode "
                    "WHERE queue_id = %s AND code = 'verified'",
                    [held_item.pk, queue.pk, alice.pk, queue.pk],
                )
            inserted.set()
            assert finish.wait(30)
        return None

    run_in_threads(2, hold_an_uncommitted_decision)
    assert Decision.objects.count() == 3


@pytest.mark.django_db(transaction=True)
def test_the_sealer_leaves_uncommitted_decisions_for_a_later_round(queue, alice):
    decide_one(queue, alice, "first")
    make_items(queue, 1, prefix="late")
    late_item = claim_next(queue=queue, reviewer=alice)
    inserted, sealed = threading.Event(), threading.Event()

    def run(i: int) -> int:
        if i == 0:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(
                        "INSERT INTO queue_app_decision (item_id, queue_id, reviewer_id, verdict, "
                        "reason_code_id, evidence_hash, note, created_at, chain_hash) SELECT %s, "
                        "%s, %s, 'approve', id, repeat('a', 64), '', now(), '' FROM "
                        "queue_app_reasoncode WHERE queue_id = %s AND code = 'verified' "
                        "RETURNING id",
                        [late_item.pk, queue.pk, alice.pk, queue.pk],
                    )
                    decision_id = cursor.fetchone()[0]
                inserted.set()
                assert sealed.wait(30)
            return decision_id
        assert inserted.wait(30)
        count = seal_all()
        sealed.set()
        return count

    late_id, sealed_first = run_in_threads(2, run)
    assert sealed_first == 1
    assert not ChainEntry.objects.filter(decision_id=late_id).exists()
    assert seal_all() == 1
    assert ChainEntry.objects.filter(decision_id=late_id, batch__seq=2).exists()
    assert verify_chain().ok


@pytest.mark.django_db(transaction=True)
def test_concurrent_decisions_in_two_queues_are_each_sealed_once_and_verify(queue, reviewers_group):
    from django.contrib.auth.models import User

    other = make_queue("payments", group=reviewers_group)
    make_items(queue, 40, prefix="k")
    make_items(other, 40, prefix="p")
    reviewers = [User.objects.create_user(f"r{i}") for i in range(8)]
    for user in reviewers:
        user.groups.add(reviewers_group)

    def work(i: int) -> int:
        target = queue if i % 2 else other
        made = 0
        while (item := claim_next(queue=target, reviewer=reviewers[i])) is not None:
            approve_as_shown(item, reviewers[i])
            made += 1
            if made % 5 == 0:
                seal_pending()  # sealers racing the deciders and each other
        return made

    assert sum(run_in_threads(8, work)) == 80
    seal_all()
    assert ChainEntry.objects.count() == Decision.objects.count() == 80
    assert not UnsealedDecision.objects.exists()
    out = StringIO()
    call_command("verify_decisions", stdout=out)
    assert "80 decisions intact" in out.getvalue()


# -- verification -------------------------------------------------------------------------------


def test_old_and_new_decisions_form_one_log(queue, alice):
    old = [decide_one(queue, alice, f"old{i}") for i in range(2)]
    make_legacy([d.pk for d in old])
    new = decide_one(queue, alice, "new")
    assert seal_all() == 1
    batch = ChainBatch.objects.get()
    assert batch.prev_hash == Decision.objects.get(pk=old[-1].pk).chain_hash
    assert ChainEntry.objects.get(decision=new).batch == batch
    assert verify_chain().ok


def _tamper(statement: str, params: list) -> None:
    with triggers_off("queue_app_decision", "queue_app_chainentry", "queue_app_chainbatch") as c:
        c.execute(statement, params)


def test_it_names_a_sealed_decision_that_was_altered(queue, alice):
    first, second = decide_one(queue, alice, "a"), decide_one(queue, alice, "b")
    seal_all()
    _tamper("UPDATE queue_app_decision SET note = 'rewritten' WHERE id = %s", [second.pk])
    result = verify_chain()
    assert not result.ok
    assert result.first_broken_id == second.pk
    assert f"broken at decision {second.pk}" in result.message
    assert first.pk != second.pk


def test_it_notices_an_altered_sealed_leaf(queue, alice):
    decision = decide_one(queue, alice, "a")
    decide_one(queue, alice, "b")
    seal_all()
    # Rewrite both the decision and its sealed leaf: the batch root gives it away.
    _tamper("UPDATE queue_app_decision SET note = 'x' WHERE id = %s", [decision.pk])
    _tamper(
        "UPDATE queue_app_chainentry AS e SET leaf = queue_app_decision_leaf(d) "
        "FROM queue_app_decision AS d WHERE d.id = e.decision_id AND d.id = %s",
        [decision.pk],
    )
    assert "no longer give the root" in verify_chain().message


def test_it_notices_a_batch_removed_from_the_middle(queue, alice):
    for prefix in "abc":
        decide_one(queue, alice, prefix)
        seal_all()
    _tamper("DELETE FROM queue_app_chainentry WHERE batch_id = 2", [])
    _tamper("DELETE FROM queue_app_chainbatch WHERE seq = 2", [])
    result = verify_chain()
    assert not result.ok
    assert "follows batch 1" in result.message


def test_it_notices_a_decision_taken_off_the_sealers_list(queue, alice):
    decision = decide_one(queue, alice, "a")
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM queue_app_unsealeddecision WHERE decision_id = %s", [decision.pk]
        )
    result = verify_chain()
    assert not result.ok
    assert f"decision {decision.pk}: it is neither sealed nor waiting" in result.message


def test_a_decision_deleted_while_it_waits_stops_the_sealer_and_is_named(queue, alice):
    decide_one(queue, alice, "a")
    gone = decide_one(queue, alice, "b")
    # An owner deletes the row itself, foreign keys and all, before the sealer gets to it.
    with triggers_off("queue_app_decision", foreign_keys=True) as cursor:
        cursor.execute("DELETE FROM queue_app_decision WHERE id = %s", [gone.pk])
    with pytest.raises(SealRefused, match=f"decision {gone.pk}"):
        seal_all()
    with pytest.raises(CommandError, match="gone from the log"):
        call_command("seal_decisions", stdout=StringIO())
    # Nothing is sealed past the hole, and the list still names what was there.
    assert not ChainBatch.objects.exists()
    assert UnsealedDecision.objects.filter(decision_id=gone.pk).exists()
    result = verify_chain()
    assert not result.ok
    assert f"decision {gone.pk}: it is waiting to be sealed but is gone" in result.message


def test_an_unsealed_decision_is_accounted_for(queue, alice):
    decide_one(queue, alice, "a")
    assert UnsealedDecision.objects.count() == 1
    assert verify_chain().ok


def test_the_seal_tables_are_append_only(queue, alice):
    decide_one(queue, alice, "a")
    seal_all()
    for statement in (
        "UPDATE queue_app_chainbatch SET size = 2",
        "DELETE FROM queue_app_chainentry",
        "UPDATE queue_app_chainentry SET position = 1",
    ):
        with (
            pytest.raises(Exception, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement)


def test_a_sealed_decision_has_an_inclusion_proof(queue, alice):
    decisions = [decide_one(queue, alice, f"d{i}") for i in range(5)]
    seal_all()
    out = StringIO()
    call_command("seal_decisions", "--prove", str(decisions[3].pk), stdout=out)
    proof = json.loads(out.getvalue())
    root = root_from_path(
        bytes.fromhex(proof["leaf"]),
        proof["index"],
        proof["size"],
        [bytes.fromhex(h) for h in proof["path"]],
    )
    assert root.hex() == proof["root"] == ChainBatch.objects.get().merkle_root
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT queue_app_decision_leaf(d) FROM queue_app_decision AS d WHERE id = %s",
            [decisions[3].pk],
        )
        assert cursor.fetchone()[0] == proof["leaf"]


def test_an_unsealed_decision_has_no_proof_yet(queue, alice):
    decision = decide_one(queue, alice, "a")
    with pytest.raises(CommandError, match="is not sealed"):
        call_command("seal_decisions", "--prove", str(decision.pk))


def test_the_apply_worker_seals_on_its_cadence(queue, alice):
    from queue_app.apply import RetryPolicy
    from queue_app.management.commands.run_apply_worker import ApplyWorker

    decide_one(queue, alice, "a")
    worker = ApplyWorker(
        batch_size=10,
        poll_interval=1.0,
        escalate_every=0,
        seal_every=1.0,
        policy=RetryPolicy(),
        notify=False,
    )
    worker.drain()
    assert ChainEntry.objects.count() == 1
