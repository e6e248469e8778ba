"""The evidence hash: what the reviewer actually saw, as one sha256.

The item page renders the subject and payload; this module turns exactly those into a canonical
string (sorted keys, decimals as strings, no whitespace) and hashes it. The page puts the hash in
the form; submit recomputes it from the row. Any change in between is a mismatch.
"""

from __future__ import annotations

import hashlib
from typing import Any

from queue_app.jsonutil import exact_dumps


def canonical_evidence(*, subject: str, payload: Any) -> str:
    """Return the canonical serialisation of what the item page renders."""
    return exact_dumps(
        {"subject": subject, "payload": payload}, sort_keys=True, decimals_as_strings=True
    )


def evidence_hash(*, subject: str, payload: Any) -> str:
    """Return the sha256 hex digest of the canonical evidence."""
    return hashlib.sha256(canonical_evidence(subject=subject, payload=payload).encode()).hexdigest()
