"""The rows the console's item page shows besides the item, read in one round trip.

One ORM query for each (decisions, reason codes, evidence rules, hold reasons) would be four
round trips, and Django compiling four querysets per page view, which cost more client CPU
than rendering the page (B8, docs/performance.md). Here the statements of items_sql
go to the server together (runner.run_together), bound on the server and prepared after a
few runs, and come back as model instances with their related rows attached, so the template
and the helpers it calls (warnings_for, the hold form) read them without another query.

Only for an item the caller has already found and may see (views._item_for): nothing here
checks access.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model

from queue_app.db.runner import Result, build_instances, run_together, split_result
from queue_app.db.statements import items as items_sql
from queue_app.db.statements import timeline as timeline_sql
from queue_app.models import (
    REVIEW_VERDICTS,
    Decision,
    DecisionStatus,
    EvidenceRule,
    HoldReason,
    ReasonCode,
    ReviewItem,
)


@dataclass(frozen=True)
class CheckReturn:
    """A checker's return of a decision: who, when, and the note the maker reads."""

    actor_username: str
    note: str
    created_at: datetime


@dataclass
class ItemPageRows:
    decisions: list[Decision] = field(default_factory=list)
    evidence_rules: list[EvidenceRule] = field(default_factory=list)
    # The decision form's choices: the queue's active reasons for the review verdicts, by
    # verdict then label; and its hold reasons. Both empty unless the viewer holds the lease.
    reasons: list[ReasonCode] = field(default_factory=list)
    hold_reasons: list[HoldReason] = field(default_factory=list)
    # Every reason code of the item's queues (retired too): names a suggestion's reason.
    all_reasons: list[ReasonCode] = field(default_factory=list)
    # The timeline page's rows and the other people's names, as read (the page builds them).
    timeline: Result = ((), [])
    touched_by: Result = ((), [])


@dataclass
class PageResults:
    """What read_item_page read besides the item, for item_page_rows to build."""

    decisions: Result
    reason_codes: Result
    evidence_rules: Result
    hold_reasons: Result
    lease_holder: Result
    returns: Result
    # The case view's timeline page and who else touched the item (selectors/item_timeline.py
    # builds them; the statements know the blind QA rule, so nothing hidden is read).
    timeline: Result
    touched_by: Result


@dataclass(frozen=True)
class TimelinePage:
    """Which page of the item's timeline to read with it, and with whose eyes."""

    viewer_id: int
    offset: int = 0
    limit: int = 50


def read_item_page(
    *, item_id: int, user_id: int, timeline: TimelinePage | None = None
) -> tuple[ReviewItem | None, PageResults]:
    """The item with its queue and may_review (ReviewItem.objects.with_queue_and_access), and
    every row its page shows, in one round trip.

    The page's statements go with the item's read and find its queue through it
    (items_sql.PAGE_ITEM_*): one round trip for the item page instead of two. The caller decides
    from the item whether the user may see it; whatever else was read is then dropped.
    """
    statement, params = ReviewItem.objects.with_queue_and_access_statement(
        item_id=item_id, user_id=user_id
    )
    page = timeline or TimelinePage(viewer_id=user_id)
    item, *rest = run_together([(statement, params), *_page_steps(item_id, page)])
    return ReviewItem.objects.built_with_queue(item), PageResults(*rest)


def _page_steps(item_id: int, page: TimelinePage) -> list[tuple[str, dict[str, Any]]]:
    """The statements of the page's rows, in PageResults' order; each finds the queue (and the
    lease holder) through the item."""
    params = {"item_id": item_id}
    seen_by = {"item_id": item_id, "viewer_id": page.viewer_id}
    offset = max(page.offset, 0)
    return [
        (items_sql.ITEM_DECISIONS, params),
        (items_sql.PAGE_ITEM_REASON_CODES, params),
        (items_sql.PAGE_ITEM_EVIDENCE_RULES, params),
        (items_sql.PAGE_ITEM_HOLD_REASONS, params),
        (items_sql.PAGE_ITEM_LEASE_HOLDER, params),
        (items_sql.PAGE_ITEM_RETURNS, params),
        # One row more than the page says whether older entries exist; each branch of the
        # statement stops at the page's reach.
        (
            timeline_sql.ITEM_TIMELINE,
            {
                **seen_by,
                "limit": page.limit + 1,
                "offset": offset,
                "reach": offset + page.limit + 1,
            },
        ),
        (timeline_sql.ITEM_TOUCHED_BY, {**seen_by, "limit": TOUCHED_BY}),
    ]


TOUCHED_BY = 6  # names in the case header's "also touched by"


def item_page_rows(
    item: ReviewItem,
    *,
    mine: bool,
    held_by_other: bool,
    read: PageResults | None = None,
    timeline: TimelinePage | None = None,
) -> ItemPageRows:
    """Read the decisions (with their reasons, authors and checkers' returns), the queue's
    evidence rules and, for the lease holder, the form's reason codes and hold reasons; name
    the lease holder on item.lease_owner when it is someone else. read: what read_item_page
    already read with the item, built here instead of read again."""
    user_model = get_user_model()
    if read is None:
        # An item read on its own (views._render_item after a refused write): its rows now.
        page = timeline or TimelinePage(viewer_id=0)
        read = PageResults(*run_together(_page_steps(item.pk, page)))
    decision_columns, (names, reviewer_rows) = split_result(read.decisions, prefix="reviewer__")
    decisions = build_instances(Decision, decision_columns)
    user_id = names.index("id")  # NULL where the decision carries its reviewer's name
    joined = [row for row in reviewer_rows if row[user_id] is not None]
    reviewers = {u.pk: u for u in build_instances(user_model, (names, joined))}
    codes = build_instances(ReasonCode, read.reason_codes)
    by_id = {code.pk: code for code in codes}
    returns = {row[0]: CheckReturn(*row[1:]) for row in read.returns[1]}
    for decision in decisions:
        # The checker's return of this decision, if it was returned (None otherwise).
        decision.check_return = returns.get(decision.pk)
        # Set as select_related would: the template reads decision.reason_code.label, and
        # reviewer_name falls back to decision.reviewer for rows without reviewer_username.
        # A code missing here (none should be) is left to the descriptor to load.
        if decision.reason_code_id in by_id:
            decision.reason_code = by_id[decision.reason_code_id]
        if decision.reviewer_id in reviewers:
            decision.reviewer = reviewers[decision.reviewer_id]
        decision.story_label = DecisionStatus(decision.story_status).label
    rows = ItemPageRows(
        decisions=decisions,
        evidence_rules=build_instances(EvidenceRule, read.evidence_rules),
        all_reasons=codes,
        timeline=read.timeline,
        touched_by=read.touched_by,
    )
    if mine:
        rows.reasons = [
            code
            for code in codes
            if code.queue_id == item.queue_id
            and code.verdict in REVIEW_VERDICTS
            and code.retired_at is None
        ]
        rows.hold_reasons = build_instances(HoldReason, read.hold_reasons)
    if held_by_other:
        holders = build_instances(user_model, read.lease_holder)
        # read_item_page read the holder in a statement of its own: the one the item names.
        if holders and holders[0].pk == item.lease_owner_id:
            item.lease_owner = holders[0]
    return rows
