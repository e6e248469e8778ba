"""The audit export: every decision as JSON lines or CSV, streamed in constant memory.

Rows come off a server-side cursor in chunks (QuerySet.iterator), are turned into one line of
text each and handed on; nothing holds more than one chunk. The command and the admin action
both call export_lines().

CSV is opened by spreadsheets, which run a cell starting with = + - @ (or a tab or carriage
return before one) as a formula: a subject `=HYPERLINK(...)` from upstream or a note
`+cmd|...` from a reviewer would arrive live. So in CSV every text cell starting with one of
those characters gets a leading single quote (the OWASP advice), whatever the column: text is
the only place they can come from. Integer cells (ids and chain positions, never negative) are
written as they are. JSON lines carry every value exactly; audits that compare values use them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from queue_app.evidence import attachments_of
from queue_app.models import Decision, DecisionStory

FORMATS = ("jsonl", "csv")
CHUNK_SIZE = 2000

# Output name -> ORM path, in column order. applied_at is empty while the effect is pending.
# reviewer is the username recorded with the decision (see reviewer_as_decided) and
# reviewer_id the account: together they say who decided, whatever renames came later.
FIELDS: dict[str, str] = {
    "decision_id": "id",
    "created_at": "created_at",
    "queue": "queue__slug",
    "item_id": "item_id",
    "item_subject": "item__subject",
    "trace_id": "item__trace_id",
    "reviewer": "reviewer_as_decided",
    "reviewer_id": "reviewer_id",
    "verdict": "verdict",
    "reason_code": "reason_code__code",
    "evidence_hash": "evidence_hash",
    "note": "note",
    "supersedes": "supersedes_id",
    "corrected_verdict": "corrected_verdict",
    "chain_seq": "chain_seq",
    "chain_hash": "chain_hash",
    "applied_at": "applied__applied_at",
    # The item's files as "name=sha256" pairs, by name, space-separated ("" for none): the digests
    # evidence_hash covers. A decided item's attachments are frozen (the trigger
    # item_attachments_frozen), so these are the files the decision was made over. After the columns
    # older readers know.
    "attachments": "item__attachments",
    # What became of the decision (queue_app/models/story.py): returned, overturned, applied, ... as
    # every other surface says it. After attachments, so readers by position keep working.
    "status": "story_status",
}
# The decision's link in the log, read from where it lives (see chain_columns); last, so older
# readers keep working.
CHAIN_FIELDS = ("seal__batch_id", "seal__batch__batch_hash", "seal__position", "seal__leaf")
# What the maker saw of the item's machine suggestion (models.SuggestionView: shown,
# revealed_before_choice, revealed_after_choice, not_shown, automatic), when it was first on
# their page, and whether the verdict followed it; all empty where the item had none. Last of
# all, so readers by position keep working.
SUGGESTION_FIELDS = ("suggestion_view", "suggestion_shown_at", "suggestion_followed")
COLUMNS = (*FIELDS, "chain_position", "chain_leaf", "chain_state", *SUGGESTION_FIELDS)
_ATTACHMENTS = list(FIELDS).index("attachments")

# chain_state: how the decision is anchored in the tamper-evident log (queue_app/chain.py).
CHAINED = "chained"  # a link of the per-decision chain (recorded before sealed batches)
SEALED = "sealed"  # a leaf of a sealed batch
UNSEALED = "unsealed"  # committed, waiting for the sealer's next round: no link yet


def decisions_between(
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    queue: str | None = None,
) -> QuerySet[Decision]:
    """Return decisions created in [since, until) in the queue (slug), all when unbounded."""
    decisions = Decision.objects.all()
    if since is not None:
        decisions = decisions.filter(created_at__gte=since)
    if until is not None:
        decisions = decisions.filter(created_at__lt=until)
    if queue:
        decisions = decisions.filter(queue__slug=queue)
    return decisions


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (int, str)):
        return value
    return str(value)  # UUIDs


# What a spreadsheet may take as the start of a formula (OWASP "CSV injection").
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(value: Any) -> Any:
    """Return a text cell a spreadsheet would run as a formula with a leading quote; else as is."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def export_rows(decisions: QuerySet[Decision]) -> Iterator[dict[str, Any]]:
    """Yield each decision as a dict of COLUMNS, oldest first, from a server-side cursor."""
    # Decisions recorded before usernames were recorded with them have none: for those (and only
    # those) the reviewer's username at export time is the best there is; reviewer_id is exact.
    rows = (
        decisions.annotate(  # type: ignore[no-redef]  # story_status is no field: Django allows it
            reviewer_as_decided=Coalesce("reviewer_username", "reviewer__username"),
            # Per row, by the decision's key, not as a join: the view then costs a few index
            # probes a row whatever the planner believes of the tables' sizes (a join planned
            # on stale statistics after a bulk load rescanned the view for every row).
            story_status=Subquery(
                DecisionStory.objects.filter(decision_id=OuterRef("pk")).values("status")
            ),
        )
        .order_by("id")
        .values_list(*FIELDS.values(), *CHAIN_FIELDS, *SUGGESTION_FIELDS)
    )
    chained = len(FIELDS) + len(CHAIN_FIELDS)
    for row in rows.iterator(chunk_size=CHUNK_SIZE):
        values = dict(zip(FIELDS, map(_plain, row[: len(FIELDS)]), strict=True))
        values["attachments"] = attachment_digests(row[_ATTACHMENTS])
        values.update(chain_columns(values, *row[len(FIELDS) : chained]))
        values.update(zip(SUGGESTION_FIELDS, map(_plain, row[chained:]), strict=True))
        yield values


def chain_columns(
    values: dict[str, Any],
    batch_seq: int | None,
    batch_hash: str | None,
    position: int | None,
    leaf: str | None,
) -> dict[str, Any]:
    """Return a decision's link in the log: its own chain link, its sealed batch, or none yet.

    A decision sealed in a batch carries no chain_seq of its own (the columns are the old
    per-decision chain's); its link is the batch (chain_seq, chain_hash: the batch's position
    and hash) and its leaf there (chain_position, chain_leaf), which seal_decisions --prove
    turns into an inclusion proof.
    """
    if values["chain_seq"] is not None:
        return {"chain_position": None, "chain_leaf": None, "chain_state": CHAINED}
    if batch_seq is None:
        return {
            "chain_seq": None,
            "chain_hash": None,
            "chain_position": None,
            "chain_leaf": None,
            "chain_state": UNSEALED,
        }
    return {
        "chain_seq": batch_seq,
        "chain_hash": batch_hash,
        "chain_position": position,
        "chain_leaf": leaf,
        "chain_state": SEALED,
    }


def attachment_digests(attachments: Any) -> str:
    """Return an item's attachments as "name=sha256" pairs by name, space-separated."""
    entries = attachments_of(attachments)
    return " ".join(f"{name}={entries[name]['sha256']}" for name in sorted(entries))


def export_lines(decisions: QuerySet[Decision], *, fmt: str) -> Iterator[str]:
    """Yield the export as text lines (each ending in a newline) in jsonl or csv."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    if fmt == "jsonl":
        for row in export_rows(decisions):
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    # RFC 4180 line ends: the writer then quotes any cell holding a carriage return or a line
    # feed. With "\n" alone a lone "\r" in a subject or note went out unquoted, and readers
    # (spreadsheets, Python's csv) split the row there.
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\r\n")

    def take() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writeheader()
    yield take()
    for row in export_rows(decisions):
        writer.writerow({name: neutralise_formula(value) for name, value in row.items()})
        yield take()
