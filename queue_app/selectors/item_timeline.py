"""Read one item's timeline for its case view: every event, decision and lane task, one list.

One statement (timeline_sql.ITEM_TIMELINE) over every table that records something about the
item, newest first, a page at a time. What the viewer may not see is not read: a blind QA
reviewer gets no decision, outcome or name (services/blindness.py), and what a decision's
maker saw of a machine suggestion is told only where the page shows the suggestion itself
(show_suggestion), so the timeline cannot say more than the queue's display policy does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from queue_app.datetimes import local_text
from queue_app.db.runner import Result, fetch_dicts
from queue_app.db.statements import timeline as timeline_sql
from queue_app.jsonutil import stored_loads
from queue_app.models import DecisionStatus, ItemEventKind, LaneResult
from queue_app.suggestion_words import AUTOMATIC_WORDS, seen_words

PAGE = 50
TOUCHED_BY = 6
# "Show all" pages through the timeline this many entries at a time: every branch of the
# statement still stops at the page it was asked for.
ALL_PAGE = 500

_LANES = {"check": "Check", "qa": "QA review", "adjudication": "Adjudication"}
_VERDICTS = {"approve": "Approve", "reject": "Reject", "escalate": "Escalate"}
_TONES = {"approve": "success", "reject": "danger", "escalate": "warning", "overturn": "info"}


@dataclass
class TimelineEntry:
    at: datetime
    source: str  # event, decision, lane_task, lane_outcome
    kind: str
    title: str
    actor: str | None = None
    lines: list[str] = field(default_factory=list)
    note: str = ""
    tone: str = ""  # a badge modifier: success, danger, warning, info
    status: str = ""  # a decision's story (DecisionStatus), and its words
    status_label: str = ""


@dataclass
class Timeline:
    entries: list[TimelineEntry]
    offset: int
    limit: int
    more: bool  # entries beyond this page (older ones)
    blind: bool

    @property
    def next_offset(self) -> int:
        return self.offset + self.limit


def touched_by_params(*, item_id: int, viewer_id: int) -> dict[str, Any]:
    """The parameters of timeline_sql.ITEM_TOUCHED_BY."""
    return {"item_id": item_id, "viewer_id": viewer_id, "limit": TOUCHED_BY}


def timeline_from(
    result: Result, *, blind: bool, show_suggestion: bool, offset: int, limit: int
) -> Timeline:
    """Build one page of the timeline from ITEM_TIMELINE's rows (read with the item's page)."""
    names, values = result
    rows = [dict(zip(names, row, strict=True)) for row in values]
    entries = [_entry(row, show_suggestion=show_suggestion) for row in rows[:limit]]
    return Timeline(entries, max(offset, 0), limit, more=len(rows) > limit, blind=blind)


def touched_by_from(result: Result) -> list[str]:
    """The names ITEM_TOUCHED_BY read, latest first."""
    names, values = result
    return [row[names.index("username")] for row in values]


def item_touched_by(*, item_id: int, viewer_id: int) -> list[str]:
    """Return who else has acted on the item (claimed, decided, checked, held...), latest first;
    nobody to whoever holds its blind QA review."""
    rows = fetch_dicts(
        timeline_sql.ITEM_TOUCHED_BY, touched_by_params(item_id=item_id, viewer_id=viewer_id)
    )
    return [row["username"] for row in rows]


def _entry(row: dict[str, Any], *, show_suggestion: bool) -> TimelineEntry:
    source = row["source"]
    if source == "decision":
        return _decision(row, show_suggestion=show_suggestion)
    if source == "lane_task":
        return TimelineEntry(
            row["at"], source, row["kind"], f"{_LANES.get(row['kind'], row['kind'])} opened"
        )
    if source == "lane_outcome":
        return _outcome(row)
    return _event(row)


def _decision(row: dict[str, Any], *, show_suggestion: bool) -> TimelineEntry:
    verdict = row["verdict"]
    if verdict == "overturn":
        title = f"Overturn → {row['corrected_verdict']}"
    else:
        title = _VERDICTS.get(verdict, verdict)
    lines = []
    if row["reason_label"]:
        lines.append(f"Reason: {row['reason_label']}")
    words = seen_words(row["suggestion_view"], row["suggestion_followed"])
    # "Automatic" says only that the machine decided, which the entry says anyway.
    if words and (show_suggestion or words == AUTOMATIC_WORDS):
        lines.append(f"Suggestion: {words}")
    return TimelineEntry(
        row["at"],
        "decision",
        verdict,
        title,
        actor=row["actor"],
        lines=lines,
        note=row["note"] or "",
        tone=_TONES.get(verdict, ""),
        status=row["status"] or "",
        status_label=DecisionStatus(row["status"]).label if row["status"] else "",
    )


def _outcome(row: dict[str, Any]) -> TimelineEntry:
    kind = row["kind"]
    title = f"{_LANES.get(kind, kind)}: {LaneResult(row['status']).label.lower()}"
    lines = []
    if row["verdict"]:
        lines.append(f"Verdict: {_VERDICTS.get(row['verdict'], row['verdict'])}")
    if row["reason_label"]:
        lines.append(f"Reason: {row['reason_label']}")
    agrees = _detail(row).get("agrees_verdict")
    if kind == "qa" and agrees is not None:
        lines.append("Agrees with the decision" if agrees else "Disagrees with the decision")
    tone = "danger" if row["status"] in ("returned", "overturned") else ""
    return TimelineEntry(
        row["at"],
        "lane_outcome",
        kind,
        title,
        actor=row["actor"],
        lines=lines,
        note=row["note"] or "",
        tone=tone,
    )


def _detail(row: dict[str, Any]) -> dict[str, Any]:
    # jsonb comes back as text from the raw statements (the project loads no jsonb globally).
    detail = row["detail"]
    if isinstance(detail, str):
        detail = stored_loads(detail)
    return detail if isinstance(detail, dict) else {}


def _event(row: dict[str, Any]) -> TimelineEntry:
    kind = row["kind"]
    detail = _detail(row)
    try:
        title = ItemEventKind(kind).label
    except ValueError:
        title = kind.replace("_", " ").capitalize()
    lines: list[str] = []
    # Only named fields of an event's detail: the rest (lease tokens, hashes) is for the audit.
    if kind == ItemEventKind.CREATED:
        title = "Received"
    elif kind == ItemEventKind.HELD:
        until = parse_datetime(str(detail.get("hold_until") or ""))
        if until is not None:
            lines.append(f"Until {local_text(until)}")
        if detail.get("reason_code"):
            lines.append(f"Reason: {detail['reason_code']}")
    elif kind in (ItemEventKind.ATTACHMENT_PUT, ItemEventKind.ATTACHMENT_REVEALED) and detail.get(
        "name"
    ):
        lines.append(f"Document: {detail['name']}")
    tone = {
        ItemEventKind.AUTO_ESCALATED: "warning",
        ItemEventKind.HELD: "info",
        ItemEventKind.EVIDENCE_REPLACED: "warning",
    }.get(kind, "")
    return TimelineEntry(
        row["at"], "event", kind, title, actor=row["actor"], lines=lines, tone=tone
    )
