"""Review Console's data model, one module per part; every model is importable from here.

Queue state (ReviewItem.state and the lease columns) is derived working state; decisions are
the facts. Django registers the models this package imports, so each module is imported here.
"""

from __future__ import annotations

# The tracked tables' history (append-only, recorded by triggers).
from queue_app.models import access_history

# Appeals (DSA Article 20): complaints against decisions, and their outcome notices.
from queue_app.models.appeals import Appeal, AppealNotice

# Second-person controls: maker-checker policies, lane tasks and their outcomes.
from queue_app.models.lane_tasks import (
    CHECK_POLICY_VERDICTS,
    RESULTS_BY_KIND,
    CheckPolicy,
    LaneKind,
    LaneOutcome,
    LaneResult,
    LaneState,
    LaneTask,
)

# Queues, items, decisions, reasons, effects, the sealed chain, API clients, sessions.
from queue_app.models.review import (
    CORRECTED_VERDICTS,
    DEADLINE_OPEN_STATES,
    REVIEW_VERDICTS,
    ApiClient,
    ApiScope,
    AppliedDecision,
    AppliedStatus,
    AutomationSwitch,
    ChainBatch,
    ChainEntry,
    ChainVerification,
    CheckTally,
    Decision,
    DecisionTally,
    EffectJob,
    EvidenceRule,
    HoldReason,
    ItemEvent,
    ItemEventKind,
    ItemState,
    LaneOutcomeEntry,
    Queue,
    ReasonCode,
    ReviewItem,
    ReviewSession,
    SignOnLink,
    SuggestionDisplay,
    SuggestionView,
    UnsealedDecision,
    UnsealedLaneOutcome,
    VeilBlur,
    Verdict,
)

# Statements of reasons: a queue's policy, its reasons' mappings, the statements built.
from queue_app.models.statements import (
    DeliveryChannel,
    ReasonMapping,
    StatementDelivery,
    StatementEntry,
    StatementKind,
    StatementOfReasons,
    StatementPolicy,
    UnsealedStatement,
)

# One story of an item: each decision's status and the standing outcome (two database views).
from queue_app.models.story import (
    DecisionStatus,
    DecisionStory,
    ItemStory,
)

# Reviewer wellness: how each reviewer wants a sensitive queue's images shown.
from queue_app.models.wellness import ReviewerPreferences
from queue_app.rules import RuleTest

__all__ = [
    "CHECK_POLICY_VERDICTS",
    "CORRECTED_VERDICTS",
    "DEADLINE_OPEN_STATES",
    "RESULTS_BY_KIND",
    "REVIEW_VERDICTS",
    "ApiClient",
    "ApiScope",
    "Appeal",
    "AppealNotice",
    "AppliedDecision",
    "AppliedStatus",
    "AutomationSwitch",
    "ChainBatch",
    "ChainEntry",
    "ChainVerification",
    "CheckPolicy",
    "CheckTally",
    "Decision",
    "DecisionStatus",
    "DecisionStory",
    "DecisionTally",
    "DeliveryChannel",
    "EffectJob",
    "EvidenceRule",
    "HoldReason",
    "ItemEvent",
    "ItemEventKind",
    "ItemState",
    "ItemStory",
    "LaneKind",
    "LaneOutcome",
    "LaneOutcomeEntry",
    "LaneResult",
    "LaneState",
    "LaneTask",
    "Queue",
    "ReasonCode",
    "ReasonMapping",
    "ReviewItem",
    "ReviewSession",
    "ReviewerPreferences",
    "RuleTest",
    "SignOnLink",
    "StatementDelivery",
    "StatementEntry",
    "StatementKind",
    "StatementOfReasons",
    "StatementPolicy",
    "SuggestionDisplay",
    "SuggestionView",
    "UnsealedDecision",
    "UnsealedLaneOutcome",
    "UnsealedStatement",
    "VeilBlur",
    "Verdict",
    "access_history",
]
