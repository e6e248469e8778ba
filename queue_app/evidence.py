"""The evidence hash: what the reviewer actually saw, as one sha256.

The item page renders the subject, the payload and the attachments; this module turns exactly
those into a canonical string (sorted keys, decimals as strings, no whitespace) and hashes it.
The page puts the hash in the form; submit recomputes it from the row. Any change in between is
a mismatch.

Attachments enter by their entries (name, sha256 of the stored bytes, type, size), never the
bytes themselves: a replaced file changes its digest and so the hash. An item without
attachments hashes exactly as it did before attachments existed (the key is left out), so the
hashes carried by open forms and recorded decisions stay valid.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from queue_app.jsonutil import exact_dumps


def canonical_evidence(
    *, subject: str, payload: Any, attachments: dict[str, Any] | None = None
) -> str:
    """Return the canonical serialisation of what the item page renders."""
    evidence: dict[str, Any] = {"subject": subject, "payload": payload}
    if attachments:
        evidence["attachments"] = attachments
    return exact_dumps(evidence, sort_keys=True, decimals_as_strings=True)


def evidence_hash(*, subject: str, payload: Any, attachments: dict[str, Any] | None = None) -> str:
    """Return the sha256 hex digest of the canonical evidence."""
    canonical = canonical_evidence(subject=subject, payload=payload, attachments=attachments)
    return hashlib.sha256(canonical.encode()).hexdigest()


def item_evidence_hash(item: Any) -> str:
    """Return the evidence hash of an item (a ReviewItem) as loaded."""
    return evidence_hash(
        subject=item.subject, payload=item.payload, attachments=attachments_of(item.attachments)
    )


def attachments_of(value: Any) -> dict[str, Any]:
    """Return the attachments column as a dict, from a model field or a raw row (text)."""
    if value is None or value == "":
        return {}
    if isinstance(value, (str, bytes)):
        value = json.loads(value)
    return dict(value)
