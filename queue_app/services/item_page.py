"""The rows the console's item page shows besides the item, read in one round trip.

The page used to run one ORM query for each (decisions, reason codes, evidence rules, hold
reasons): four round trips, and Django compiling four querysets per page view, which cost more
client CPU than rendering the page (bench/NOTES.md, B8). Here the statements of queue_app.sql
go to the server together (managers.run_together), bound on the server and prepared after a
few runs, and come back as model instances with their related rows attached, so the template
and the helpers it calls (warnings_for, the hold form) read them without another query.

Only for an item the caller has already found and may see (views._item_for): nothing here
checks access.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model

from queue_app import sql
from queue_app.managers import build_instances, run_together, split_result
from queue_app.models import (
    REVIEW_VERDICTS,
    Decision,
    EvidenceRule,
    HoldReason,
    ReasonCode,
    ReviewItem,
)


@dataclass
class ItemPageRows:
    decisions: list[Decision] = field(default_factory=list)
    evidence_rules: list[EvidenceRule] = field(default_factory=list)
    # The decision form's choices: the queue's active reasons for the review verdicts, by
    # verdict then label; and its hold reasons. Both empty unless the viewer holds the lease.
    reasons: list[ReasonCode] = field(default_factory=list)
    hold_reasons: list[HoldReason] = field(default_factory=list)


def item_page_rows(item: ReviewItem, *, mine: bool, held_by_other: bool) -> ItemPageRows:
    """Read the decisions (with their reasons and authors), the queue's evidence rules and,
    for the lease holder, the form's reason codes and hold reasons; name the lease holder on
    item.lease_owner when it is someone else."""
    user_model = get_user_model()
    params: dict[str, Any] = {
        "item_id": item.pk,
        "queue_id": item.queue_id,
        "owner_id": item.lease_owner_id,
    }
    steps = [
        (sql.ITEM_DECISIONS, params),
        (sql.ITEM_REASON_CODES, params),
        (sql.QUEUE_EVIDENCE_RULES, params),
    ]
    if mine:
        steps.append((sql.QUEUE_HOLD_REASONS, params))
    if held_by_other:
        steps.append((sql.LEASE_HOLDER, params))
    results = run_together(steps)
    decision_columns, (names, reviewer_rows) = split_result(results[0], prefix="reviewer__")
    decisions = build_instances(Decision, decision_columns)
    user_id = names.index("id")  # NULL where the decision carries its reviewer's name
    joined = [row for row in reviewer_rows if row[user_id] is not None]
    reviewers = {u.pk: u for u in build_instances(user_model, (names, joined))}
    codes = build_instances(ReasonCode, results[1])
    by_id = {code.pk: code for code in codes}
    for decision in decisions:
        # Set as select_related would: the template reads decision.reason_code.label, and
        # reviewer_name falls back to decision.reviewer for rows without reviewer_username.
        # A code missing here (none should be) is left to the descriptor to load.
        if decision.reason_code_id in by_id:
            decision.reason_code = by_id[decision.reason_code_id]
        if decision.reviewer_id in reviewers:
            decision.reviewer = reviewers[decision.reviewer_id]
    rows = ItemPageRows(
        decisions=decisions, evidence_rules=build_instances(EvidenceRule, results[2])
    )
    if mine:
        rows.reasons = [
            code
            for code in codes
            if code.queue_id == item.queue_id
            and code.verdict in REVIEW_VERDICTS
            and code.retired_at is None
        ]
        rows.hold_reasons = build_instances(HoldReason, results[3])
    if held_by_other:
        holders = build_instances(user_model, results[-1])
        if holders:
            item.lease_owner = holders[0]
    return rows
