"""Signed checkpoints of the decision chain: an anchor for the log kept outside the database.

The hash chain makes a rewrite of one decision visible, but an owner who
disables the triggers can rewrite rows and recompute every later hash, or cut rows off the end,
and the chain still verifies. A checkpoint written out of the database's reach (a file kept
elsewhere, a webhook to another system) records each chain's head — position and hash — at a
moment, signed with an Ed25519 key the database never sees. Later, ``verify_decisions
--checkpoint FILE`` proves the log still *extends* that checkpoint: the row at the recorded
position still carries the recorded hash, and everything after it still chains. Truncation
below the head, or any rewrite at or before it, fails.

The document lists chains by name: ``decisions``, the per-decision chain of the decisions made
before sealing began (fixed since), and ``seals``, the batches sealed since (queue_app/chain.py).
A checkpoint seals what has committed first, so it covers every decision, and every
second-person outcome (sealed in the same batches), up to its time.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings
from django.db import connection

from queue_app.chain import SealRefused, seal_all
from queue_app.db.statements import chain as chain_sql
from queue_app.errors import EffectError, ReviewError

FORMAT = "review-console-checkpoint/1"
CHAIN_NAME = "decisions"  # the per-decision chain of decisions made before sealing
SEALS_NAME = "seals"  # the sealed batches since


class CheckpointError(ReviewError):
    message = "The checkpoint could not be made or checked."


@dataclass(frozen=True)
class Outcome:
    """The answer of verify_checkpoint: whether the log extends the checkpoint, and why not."""

    ok: bool
    message: str


# -- keys ---------------------------------------------------------------------------------------


def generate_key() -> tuple[str, str]:
    """Return a new (private, public) key pair, each as base64 of its 32 raw bytes."""
    private = Ed25519PrivateKey.generate()
    return _b64(_raw_private(private)), _b64(_raw_public(private.public_key()))


def load_private_key(text: str) -> Ed25519PrivateKey:
    """Read a private key given as base64 of 32 raw bytes or as PEM (PKCS#8)."""
    text = text.strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_private_key(text.encode(), password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise CheckpointError("The checkpoint key is not an Ed25519 private key.")
            return key
        return Ed25519PrivateKey.from_private_bytes(_unb64(text, 32))
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"The checkpoint private key cannot be read: {exc}") from None


def load_public_key(text: str) -> Ed25519PublicKey:
    """Read a public key given as base64 of 32 raw bytes or as PEM (SubjectPublicKeyInfo)."""
    text = text.strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_public_key(text.encode())
            if not isinstance(key, Ed25519PublicKey):
                raise CheckpointError("The checkpoint public key is not an Ed25519 key.")
            return key
        return Ed25519PublicKey.from_public_bytes(_unb64(text, 32))
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"The checkpoint public key cannot be read: {exc}") from None


def signing_key() -> Ed25519PrivateKey:
    """Return the key checkpoints are signed with (REVIEW_CHECKPOINT_KEY)."""
    if not settings.REVIEW_CHECKPOINT_KEY:
        raise CheckpointError(
            "REVIEW_CHECKPOINT_KEY is not set: generate a key pair with "
            "`manage.py checkpoint --generate-key` and set it in the environment."
        )
    return load_private_key(settings.REVIEW_CHECKPOINT_KEY)


def trusted_public_key(override: str | None = None) -> Ed25519PublicKey:
    """Return the key checkpoints are verified with: the override, the setting, or the signer's.

    Never the key written inside a checkpoint: whoever can rewrite the database could also
    write a checkpoint signed with a key of their own.
    """
    if override:
        return load_public_key(override)
    if settings.REVIEW_CHECKPOINT_PUBLIC_KEY:
        return load_public_key(settings.REVIEW_CHECKPOINT_PUBLIC_KEY)
    if settings.REVIEW_CHECKPOINT_KEY:
        return signing_key().public_key()
    raise CheckpointError(
        "No key to verify the checkpoint with: set REVIEW_CHECKPOINT_PUBLIC_KEY (or "
        "REVIEW_CHECKPOINT_KEY), or pass --public-key."
    )


# -- making and checking ------------------------------------------------------------------------


def chain_heads() -> tuple[datetime, list[dict[str, Any]]]:
    """Return the database clock and each chain's head (position, hash, and what it covers)."""
    with connection.cursor() as cursor:
        cursor.execute(chain_sql.CHAIN_HEADS)
        now, seq, chain_hash, decision_id, batch_seq, batch_hash, batch_size = cursor.fetchone()
    heads = []
    if seq is not None:
        heads.append(
            {"chain": CHAIN_NAME, "seq": seq, "hash": chain_hash, "decision_id": decision_id}
        )
    if batch_seq is not None:
        heads.append(
            {"chain": SEALS_NAME, "seq": batch_seq, "hash": batch_hash, "size": batch_size}
        )
    return now, heads


def make_checkpoint(key: Ed25519PrivateKey | None = None) -> dict[str, Any]:
    """Return a signed checkpoint document of the chain heads as they are now."""
    key = key or signing_key()
    # Seal what has committed so far, so the checkpoint covers every decision up to now:
    # behind an apply worker's seal round if one is running, not instead of it.
    try:
        seal_all(wait=True)
    except SealRefused as exc:
        raise CheckpointError(f"No checkpoint was made. {exc}") from None
    now, heads = chain_heads()
    body = {
        "format": FORMAT,
        "created_at": now.isoformat(),
        "chains": heads,
        "public_key": _b64(_raw_public(key.public_key())),
    }
    return {**body, "signature": _b64(key.sign(_canonical(body)))}


def dumps(document: dict[str, Any]) -> str:
    """Return the checkpoint as the JSON text written to files and webhooks."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def parse(text: str) -> dict[str, Any]:
    """Read a checkpoint document; CheckpointError if it is not one."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise CheckpointError(f"The checkpoint is not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CheckpointError(f"The file is not a {FORMAT} checkpoint.")
    chains = document.get("chains")
    if not isinstance(chains, list) or not all(
        isinstance(c, dict)
        and isinstance(c.get("chain"), str)
        and type(c.get("seq")) is int
        and isinstance(c.get("hash"), str)
        for c in chains
    ):
        raise CheckpointError("The checkpoint's chain list is malformed.")
    if not isinstance(document.get("signature"), str):
        raise CheckpointError("The checkpoint carries no signature.")
    return document


def verify_checkpoint(document: dict[str, Any], public_key: Ed25519PublicKey) -> Outcome:
    """Check the signature, then that the log still extends every head the checkpoint names."""
    body = {k: v for k, v in document.items() if k != "signature"}
    try:
        public_key.verify(_unb64(document["signature"], 64), _canonical(body))
    except (InvalidSignature, CheckpointError):
        return Outcome(
            False,
            "The checkpoint's signature does not verify with the trusted public key: the file "
            "was altered, or it was signed with another key.",
        )
    with connection.cursor() as cursor:
        for head in document["chains"]:
            if head["chain"] not in (CHAIN_NAME, SEALS_NAME):
                return Outcome(False, f"The checkpoint names an unknown chain {head['chain']!r}.")
            statement = (
                chain_sql.CHAIN_LINK_AT if head["chain"] == CHAIN_NAME else chain_sql.BATCH_AT
            )
            cursor.execute(statement, {"seq": head["seq"]})
            row = cursor.fetchone()
            if row is None:
                return Outcome(
                    False,
                    f"Truncated: the checkpoint of {document['created_at']} recorded the chain up "
                    f"to position {head['seq']}, and the log no longer reaches it.",
                )
            if row[0] != head["hash"]:
                return Outcome(
                    False,
                    f"Rewritten: {head['chain']} position {head['seq']} no longer carries the "
                    f"hash the checkpoint of {document['created_at']} recorded; the log at or "
                    "before it was altered and its hashes recomputed.",
                )
    positions = ", ".join(f"{h['chain']} #{h['seq']}" for h in document["chains"]) or "empty"
    return Outcome(
        True, f"The log extends the checkpoint of {document['created_at']} ({positions})."
    )


def emit(*, directory: Path | None = None, webhook: str | None = None) -> Path:
    """Write a checkpoint into the checkpoint folder (and POST it if a webhook is set)."""
    directory = directory or settings.REVIEW_CHECKPOINT_DIR
    webhook = settings.REVIEW_CHECKPOINT_WEBHOOK if webhook is None else webhook
    document = make_checkpoint()
    text = dumps(document)
    stamp = document["created_at"].replace(":", "").replace("-", "").replace("+0000", "Z")
    path = directory / f"checkpoint-{stamp}.json"
    write_atomically(path, text)
    if webhook:
        post(webhook, text)
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write text to path so that a reader sees the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def post(url: str, text: str) -> None:
    """POST a checkpoint to a receiver; EffectError unless it answers 2xx."""
    # The webhook effect's HTTP client: the same URL checks and connect/read time limits.
    from queue_app.effects import _post

    status = _post(url, text.encode(), {"Content-Type": "application/json"})
    if not 200 <= status < 300:
        raise EffectError(f"The checkpoint receiver answered HTTP {status}.")


# -- encoding -----------------------------------------------------------------------------------


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _unb64(text: str, length: int) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CheckpointError("A key or signature is not valid base64.") from None
    if len(raw) != length:
        raise CheckpointError(f"A key or signature has {len(raw)} bytes, not {length}.")
    return raw


def _raw_private(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
