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
from decimal import Decimal
from typing import Any

from queue_app.jsonutil import exact_dumps, stored_loads


def canonical_evidence(
    *,
    subject: str,
    payload: Any,
    attachments: dict[str, Any] | None = None,
    suggestion: dict[str, Any] | None = None,
) -> str:
    """Return the canonical serialisation of what the item page renders."""
    evidence: dict[str, Any] = {"subject": subject, "payload": payload}
    if attachments:
        evidence["attachments"] = attachments
    if suggestion is not None:
        evidence["suggestion"] = suggestion
    return exact_dumps(evidence, sort_keys=True, decimals_as_strings=True)


def evidence_hash(
    *,
    subject: str,
    payload: Any,
    attachments: dict[str, Any] | None = None,
    suggestion: dict[str, Any] | None = None,
) -> str:
    """Return the sha256 hex digest of the canonical evidence."""
    canonical = canonical_evidence(
        subject=subject, payload=payload, attachments=attachments, suggestion=suggestion
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def item_evidence_hash(item: Any) -> str:
    """Return the evidence hash of an item (a ReviewItem) as loaded."""
    return evidence_hash(
        subject=item.subject,
        payload=item.payload,
        attachments=attachments_of(item.attachments),
        suggestion=item.suggestion,
    )


def row_payload(value: Any) -> Any:
    """The payload column as the model reads it, from a raw row (jsonb text) or already decoded."""
    return stored_loads(value) if isinstance(value, str) else value


def row_evidence_hash(row: dict[str, Any]) -> str:
    """The evidence hash of a raw row (subject, payload, attachments) as stored: what the item
    page shows for the same row and the backfill stores."""
    return evidence_hash(
        subject=row["subject"],
        payload=row_payload(row["payload"]),
        attachments=attachments_of(row["attachments"]),
        suggestion=row_payload(row.get("suggestion")),
    )


def attachments_of(value: Any) -> dict[str, Any]:
    """Return the attachments column as a dict, from a model field or a raw row (text)."""
    if value is None or value == "":
        return {}
    if isinstance(value, (str, bytes)):
        value = json.loads(value)
    return dict(value)


def arrival_evidence_hash(
    *,
    subject: str,
    payload: Any,
    attachments: dict[str, Any] | None = None,
    suggestion: dict[str, Any] | None = None,
) -> str | None:
    """The evidence hash of a new item, or None where it can't be known yet.

    Computed from the values as written, it equals the hash of the row as read back only if
    jsonb stores the payload's values exactly as they are written, so that they decode to the
    same values (see _stored_as_written); otherwise None, and the writer hashes the row as read
    back (services.intake.store_evidence_hash).
    ReviewItem.evidence_hash says why it is kept.
    """
    if not (_stored_as_written(payload) and _stored_as_written(suggestion)):
        return None
    return evidence_hash(
        subject=subject, payload=payload, attachments=attachments, suggestion=suggestion
    )


# Well inside the 4,300 digits Python reads as an int by default (3,000 bits: 904 digits).
_INT_BITS = 3000


def _stored_as_written(value: Any) -> bool:
    """Whether the value reads back from jsonb (through jsonutil's exact decoding) as itself.

    Strings, booleans, None and ints of a sane size do (past Python's limit on digits an int is
    read back as a Decimal, jsonutil._parse_int). A Decimal does when it has a fractional part
    (its text reads back as a Decimal with the same digits and exponent) and is not a negative
    zero: an integral Decimal reads back as an int ("12", "1E+2"), and numeric has no negative
    zero ("-0.0" reads back as 0.0). Floats and anything else: not judged, so no.
    """
    if value is None or isinstance(value, (str, bool)):
        return True
    if isinstance(value, int):
        return value.bit_length() <= _INT_BITS
    if isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        return (
            value.is_finite()
            and isinstance(exponent, int)
            and exponent < 0
            and not (value.is_zero() and value.is_signed())
        )
    if isinstance(value, list):
        return all(_stored_as_written(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _stored_as_written(v) for k, v in value.items())
    return False
