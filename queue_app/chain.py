"""The decision log's tamper evidence: sealing committed decisions into batches, and checking.

Two parts, one log:

- **The per-decision chain.** Decisions recorded before sealing existed carry ``chain_seq`` and
  ``chain_hash`` = sha256(previous hash | the decision's fields), assigned by the insert trigger
  under one advisory lock that every decision in every queue had to take in turn.
- **Sealed batches.** Since 0010, decisions commit with no chain lock at all. The sealer (run
  by the apply worker, or ``manage.py seal_decisions``) takes the committed, unsealed ones,
  builds a Merkle tree over their leaves (RFC 6962 shape: leaf = sha256(0x00 | fields), node =
  sha256(0x01 | left | right)), and appends a batch whose hash covers the previous batch's
  hash, its position, its size and the root. The first batch chains to the old chain's head.

Second-person outcomes (a checker's confirmation or return, a QA review, an adjudication) are
sealed in the same batches, after the batch's decisions, and statements of reasons after
them (each leaf covers the statement's body as sent): the log an auditor reads is one, and so
is its anchor.

A decision or outcome altered afterwards changes its leaf, so its batch's root; a batch altered
changes every later batch hash. What the chain alone cannot show (a rewrite with every later
hash recomputed, or rows cut off the end) a signed checkpoint kept elsewhere shows
(queue_app/chain_checkpoints.py). A Merkle tree also gives a short proof that one decision is in a
batch (``inclusion_proof``), checkable with the batch root alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from django.db import connection, transaction

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import chain as chain_sql
from queue_app.models import ChainVerification

# pg_try_advisory_xact_lock key for the sealer ("RCseal" as an integer, for grepability).
SEAL_LOCK_KEY = 0x52437365616C
SEAL_BATCH_LIMIT = 10_000
# The share of a round kept for second-person outcomes while they wait (1 in 10 of its limit,
# none below 10): decisions arriving faster than a round seals cannot hold them back.
OUTCOME_SHARE_DIVISOR = 10


class SealRefused(Exception):
    """The sealer found the log tampered with under its lists, and sealed nothing."""


# -- Merkle trees -------------------------------------------------------------------------------


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    # The largest power of two below n: RFC 6962's split, so trees of any size are defined.
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def merkle_root(leaves: list[bytes]) -> bytes:
    """Return the Merkle tree hash over leaves (each already a leaf hash)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return _node(merkle_root(leaves[:k]), merkle_root(leaves[k:]))


def inclusion_path(leaves: list[bytes], index: int) -> list[bytes]:
    """Return the sibling hashes that lead from leaves[index] to the root (bottom first)."""
    if len(leaves) <= 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_path(leaves[:k], index), merkle_root(leaves[k:])]
    return [*inclusion_path(leaves[k:], index - k), merkle_root(leaves[:k])]


def root_from_path(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes:
    """Recompute the root from one leaf, its index, the tree size and its inclusion path."""

    def walk(index: int, size: int, path: list[bytes]) -> bytes:
        if size <= 1:
            return leaf
        k = _split(size)
        sibling, rest = path[-1], path[:-1]
        if index < k:
            return _node(walk(index, k, rest), sibling)
        return _node(sibling, walk(index - k, size - k, rest))

    if len(path) != _path_length(index, size):
        raise ValueError("The inclusion path has the wrong length for this tree.")
    return walk(index, size, path)


def _path_length(index: int, size: int) -> int:
    if size <= 1:
        return 0
    k = _split(size)
    return 1 + (_path_length(index, k) if index < k else _path_length(index - k, size - k))


def batch_hash(*, prev_hash: str, seq: int, size: int, root: str) -> str:
    """Return a batch's hash: it covers its predecessor, its position, its size and its root."""
    return hashlib.sha256(f"{prev_hash}|{seq}|{size}|{root}".encode()).hexdigest()


# -- sealing ------------------------------------------------------------------------------------


def seal_pending(*, limit: int = SEAL_BATCH_LIMIT, wait: bool = False) -> int:
    """Seal committed, unsealed decisions and second-person outcomes into one new batch (at
    most limit of them, decisions first, a tenth of the room kept for outcomes waiting);
    return how many were sealed.

    While another sealer is at it: 0 at once, or with wait, once it has committed (its batch
    is then the predecessor, and what it left is taken here).
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                chain_sql.SEAL_LOCK if wait else chain_sql.TRY_SEAL_LOCK, {"key": SEAL_LOCK_KEY}
            )
            got = wait or cursor.fetchone()[0]
            if not got:
                return 0  # another sealer is at it; what it misses, the next round takes
        # The tree's leaves in position order: the decisions, then the outcomes.
        taken = fetch_dicts(
            chain_sql.TAKE_UNSEALED,
            {"limit": limit, "outcome_share": limit // OUTCOME_SHARE_DIVISOR},
        )
        size = len(taken)
        if not size:
            return 0
        vanished = [_entry(r["kind"], r["id"]) for r in taken if r["leaf"] is None]
        if vanished:
            # Rolled back with the block: the lists keep the entries, verify_decisions names
            # them, and doctor UNSEALED sees them wait. Nothing is sealed past a hole.
            raise SealRefused(
                "The sealer's list names entries that are gone from the log (deleted outside "
                f"the application): {', '.join(vanished[:10])}. Nothing was sealed; run "
                "verify_decisions."
            )
        rows = [r for r in taken if r["kind"] == "decision"]
        outcomes = [r for r in taken if r["kind"] == "outcome"]
        statements = [r for r in taken if r["kind"] == "statement"]
        [previous] = fetch_dicts(chain_sql.SEAL_PREDECESSOR, {})
        root = merkle_root([bytes.fromhex(r["leaf"]) for r in taken]).hex()
        seq = previous["seq"] + 1
        fetch_dicts(
            chain_sql.INSERT_BATCH,
            {
                "seq": seq,
                "size": size,
                "root": root,
                "prev_hash": previous["hash"],
                "batch_hash": batch_hash(prev_hash=previous["hash"], seq=seq, size=size, root=root),
                "decision_ids": [r["id"] for r in rows],
                "leaves": [r["leaf"] for r in rows],
                "outcome_ids": [o["id"] for o in outcomes],
                "outcome_leaves": [o["leaf"] for o in outcomes],
                "statement_ids": [r["id"] for r in statements],
                "statement_leaves": [r["leaf"] for r in statements],
            },
        )
    return size


def seal_all(*, wait: bool = False) -> int:
    """Seal everything committed so far, batch after batch; return how many were sealed.

    wait: behind a sealer already at it (seal_pending), so that everything committed before
    the call is sealed when it returns; without, the apply workers' rounds skip it.
    """
    total = 0
    while sealed := seal_pending(wait=wait):
        total += sealed
    return total


# -- verification -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Break:
    decision_id: int | None
    message: str


def verify_chain() -> ChainVerification:
    """Check the old chain, every sealed batch and that no decision or second-person outcome is
    missing; record it."""
    with connection.cursor() as cursor:
        cursor.execute(chain_sql.COUNT_DECISIONS)
        checked = cursor.fetchone()[0]
        cursor.execute(chain_sql.COUNT_OUTCOMES)
        outcomes = cursor.fetchone()[0]
    broken = _first_break()
    if broken is None:
        also = f" and {outcomes} second-person outcomes" if outcomes else ""
        return ChainVerification.objects.create(
            ok=True,
            checked=checked,
            message=f"Decision chain verified: {checked} decisions{also} intact.",
        )
    return ChainVerification.objects.create(
        ok=False, checked=checked, first_broken_id=broken.decision_id, message=broken.message
    )


def _first_break() -> Break | None:
    with connection.cursor() as cursor:
        cursor.execute(chain_sql.VERIFY_CHAIN)
        row = cursor.fetchone()
    if row is not None:
        decision_id, seq, _stored, _expected = row
        return Break(
            decision_id,
            f"Decision chain broken at decision {decision_id} (chain position {seq}): its "
            "stored hash does not match its contents and predecessor. The row, or the one "
            "before it, was altered outside the application.",
        )
    broken = _first_broken_batch()
    if broken is not None:
        return broken
    [accounts] = fetch_dicts(chain_sql.UNACCOUNTED_DECISIONS, {})
    if accounts["first_unaccounted"] is not None:
        decision_id = accounts["first_unaccounted"]
        return Break(
            decision_id,
            f"Decision chain broken at decision {decision_id}: it is neither sealed nor waiting "
            "to be sealed. Its place in the sealer's list was removed outside the application.",
        )
    if accounts["first_unaccounted_outcome"] is not None:
        return Break(
            None,
            f"Decision chain broken at {_outcome(accounts['first_unaccounted_outcome'])}: it is "
            "neither sealed nor waiting to be sealed. Its place in the sealer's list was removed "
            "outside the application.",
        )
    if accounts["first_unaccounted_statement"] is not None:
        return Break(
            None,
            f"Decision chain broken at {_statement(accounts['first_unaccounted_statement'])}: "
            "it is neither sealed nor waiting to be sealed. Its place in the sealer's list was "
            "removed outside the application.",
        )
    if accounts["first_vanished"] is not None:
        decision_id = accounts["first_vanished"]
        return Break(decision_id, _vanished(f"decision {decision_id}"))
    if accounts["first_vanished_outcome"] is not None:
        return Break(None, _vanished(_outcome(accounts["first_vanished_outcome"])))
    if accounts["first_vanished_statement"] is not None:
        return Break(None, _vanished(_statement(accounts["first_vanished_statement"])))
    return None


def _vanished(what: str) -> str:
    return (
        f"Decision chain broken at {what}: it is waiting to be sealed but is gone from the "
        "log. It was deleted outside the application."
    )


def _outcome(task_id: int) -> str:
    return f"the second-person outcome of lane task {task_id}"


def _statement(statement_id: int) -> str:
    return f"statement of reasons {statement_id}"


def _entry(kind: str, entry_id: int) -> str:
    if kind == "decision":
        return f"decision {entry_id}"
    return _outcome(entry_id) if kind == "outcome" else _statement(entry_id)


def _first_broken_batch() -> Break | None:
    [start] = fetch_dicts(chain_sql.OLD_CHAIN_HEAD_HASH, {})
    previous_hash, expected_seq = start["hash"], 1
    for batch in _batches():
        first = batch.first_decision
        where = f"sealed batch {batch.seq}"
        if batch.seq != expected_seq:
            return Break(first, f"Decision chain broken: {where} follows batch {expected_seq - 1}.")
        if batch.prev_hash != previous_hash:
            return Break(
                first,
                f"Decision chain broken at {where}: it does not chain to its "
                "predecessor; a batch before it was altered or removed.",
            )
        if batch.positions != list(range(batch.size)):
            return Break(
                first,
                f"Decision chain broken at {where}: decisions or outcomes were removed "
                "from it, or its entries were altered.",
            )
        for (kind, entry_id), sealed, now in zip(
            batch.entries, batch.sealed_leaves, batch.leaves, strict=True
        ):
            if sealed != now:
                decision_id = entry_id if kind == "decision" else None
                what = _entry(kind, entry_id)
                return Break(
                    decision_id,
                    f"Decision chain broken at {what} ({where}): its contents no longer match "
                    "what was sealed; it was altered outside the application.",
                )
        root = merkle_root([bytes.fromhex(leaf) for leaf in batch.sealed_leaves]).hex()
        if root != batch.root:
            return Break(
                first,
                f"Decision chain broken at {where}: its entries no longer give "
                "the root it was sealed with.",
            )
        if batch.hash != batch_hash(
            prev_hash=batch.prev_hash, seq=batch.seq, size=batch.size, root=batch.root
        ):
            return Break(
                first, f"Decision chain broken at {where}: its hash does not match its contents."
            )
        previous_hash, expected_seq = batch.hash, batch.seq + 1
    return None


@dataclass
class _Batch:
    seq: int
    size: int
    root: str
    prev_hash: str
    hash: str
    positions: list[int]
    # ("decision", decision id), ("outcome", lane task id) or ("statement", statement id), in
    # position order.
    entries: list[tuple[str, int]]
    sealed_leaves: list[str]
    leaves: list[str]

    @property
    def first_decision(self) -> int | None:
        return next((i for kind, i in self.entries if kind == "decision"), None)


def _batches() -> Iterator[_Batch]:
    # A named (server-side) cursor: millions of entries stream in chunks, never all in memory.
    with transaction.atomic(), connection.chunked_cursor() as cursor:
        cursor.execute(chain_sql.SEALED_LEAVES)
        current: _Batch | None = None
        for seq, size, root, prev_hash, hash_, position, kind, entry_id, sealed, leaf in cursor:
            if current is None or current.seq != seq:
                if current is not None:
                    yield current
                current = _Batch(seq, size, root, prev_hash, hash_, [], [], [], [])
            if position is not None:
                current.positions.append(position)
                current.entries.append((kind, entry_id))
                current.sealed_leaves.append(sealed)
                current.leaves.append(leaf)
        if current is not None:
            yield current


# -- inclusion proofs ---------------------------------------------------------------------------


def inclusion_proof(decision_id: int) -> dict[str, object] | None:
    """Return the proof that a sealed decision is in its batch, or None if not sealed yet."""
    return _proof(
        {"decision_id": decision_id, "outcome_id": None, "statement_id": None},
        ("decision_id", decision_id),
    )


def outcome_inclusion_proof(task_id: int) -> dict[str, object] | None:
    """Return the proof that a lane task's sealed outcome is in its batch, or None if not
    sealed yet."""
    return _proof(
        {"decision_id": None, "outcome_id": task_id, "statement_id": None},
        ("lane_task_id", task_id),
    )


def statement_inclusion_proof(statement_id: int) -> dict[str, object] | None:
    """Return the proof that a sealed statement of reasons is in its batch, or None if not
    sealed yet."""
    return _proof(
        {"decision_id": None, "outcome_id": None, "statement_id": statement_id},
        ("statement_id", statement_id),
    )


def _proof(params: dict[str, int | None], named: tuple[str, int]) -> dict[str, object] | None:
    rows = fetch_dicts(chain_sql.INCLUSION_PROOF, params)
    if not rows:
        return None
    row = rows[0]
    leaves = [bytes.fromhex(leaf) for leaf in row["leaves"]]
    return {
        named[0]: named[1],
        "batch": row["seq"],
        "index": row["position"],
        "size": row["size"],
        "leaf": leaves[row["position"]].hex(),
        "path": [h.hex() for h in inclusion_path(leaves, row["position"])],
        "root": row["merkle_root"],
        "batch_hash": row["batch_hash"],
    }
