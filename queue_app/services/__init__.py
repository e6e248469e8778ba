"""The operations a person would name: claim, renew, release, decide, overturn, escalate.

Views, the API and management commands call these and nothing lower. Each takes keyword-only
arguments, runs in an explicit transaction, and fails with a queue_app.errors type. One module
per capability; callers import the package and name the operation (``services.claim_next``).
"""

from __future__ import annotations

from queue_app.services._common import NOTE_MAX_LENGTH, User, database_now, signed_in_id
from queue_app.services.access import queues_for_user, user_can_review
from queue_app.services.attachments import (
    attachment_by_digest,
    open_attachment,
    put_attachment,
    record_reveal,
)
from queue_app.services.deadlines import deadline_words, initial_due_at, is_breached
from queue_app.services.decisions import (
    find_completed_decision,
    four_eyes_refusal,
    item_decisions,
    overturn_decision,
    overturn_of,
    overturns_returned,
    reason_codes_for,
    replaced_by,
    standing_decision,
    standing_outcome,
    submit_decision,
)
from queue_app.services.escalation import escalate_abandoned, open_escalation
from queue_app.services.handoff import handoff_refusal, item_handoff
from queue_app.services.holds import hold_item, hold_reasons_for, resume_hold
from queue_app.services.intake import create_item, replace_evidence
from queue_app.services.item_page import (
    ItemPageRows,
    PageResults,
    TimelinePage,
    item_page_rows,
    read_item_page,
)
from queue_app.services.lanes import (
    adjudicate,
    claim_lane_task,
    confirm_check,
    lane_task_for,
    lanes_for_user,
    record_qa_review,
    release_lane_task,
    renew_lane_task,
    return_check,
    user_lane_kinds,
)
from queue_app.services.leases import (
    BATCH_SIZE_RANGE,
    BATCH_TTL_RANGE,
    claim_batch,
    claim_next,
    claim_next_id,
    explain_stale_lease,
    release_lease,
    renew_lease,
)
from queue_app.services.outbox import (
    retry_appeal_notices,
    retry_effect_jobs,
    retry_statement_deliveries,
)
from queue_app.services.subjects import SUBJECT_HISTORY_LIMIT, subject_history
from queue_app.services.wellness import preferences_save

__all__ = [
    "BATCH_SIZE_RANGE",
    "BATCH_TTL_RANGE",
    "NOTE_MAX_LENGTH",
    "SUBJECT_HISTORY_LIMIT",
    "ItemPageRows",
    "PageResults",
    "TimelinePage",
    "User",
    "adjudicate",
    "attachment_by_digest",
    "claim_batch",
    "claim_lane_task",
    "claim_next",
    "claim_next_id",
    "confirm_check",
    "create_item",
    "database_now",
    "deadline_words",
    "escalate_abandoned",
    "explain_stale_lease",
    "find_completed_decision",
    "four_eyes_refusal",
    "handoff_refusal",
    "hold_item",
    "hold_reasons_for",
    "initial_due_at",
    "is_breached",
    "item_decisions",
    "item_handoff",
    "item_page_rows",
    "lane_task_for",
    "lanes_for_user",
    "open_attachment",
    "open_escalation",
    "overturn_decision",
    "overturn_of",
    "overturns_returned",
    "preferences_save",
    "put_attachment",
    "queues_for_user",
    "read_item_page",
    "reason_codes_for",
    "record_qa_review",
    "record_reveal",
    "release_lane_task",
    "release_lease",
    "renew_lane_task",
    "renew_lease",
    "replace_evidence",
    "replaced_by",
    "resume_hold",
    "retry_appeal_notices",
    "retry_effect_jobs",
    "retry_statement_deliveries",
    "return_check",
    "signed_in_id",
    "standing_decision",
    "standing_outcome",
    "subject_history",
    "submit_decision",
    "user_can_review",
    "user_lane_kinds",
]
