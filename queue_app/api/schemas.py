"""Request and response schemas of the JSON API, and the bounds every input is checked against.

Each bound is declared once (``bounded_int``/``text``): the same declaration puts the range in
the OpenAPI document and produces the 422 message naming it. Payloads are free-form JSON
objects whose numbers arrive as Decimal (see wire.ExactParser) and are passed through
untouched.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, get_args

from annotated_types import GroupedMetadata
from ninja import Schema
from pydantic import AfterValidator, AwareDatetime, ConfigDict, Field, Strict, WithJsonSchema
from pydantic_core import PydanticCustomError

from queue_app.datetimes import moment_problem
from queue_app.errors import InvalidSuggestion
from queue_app.jsonutil import MAX_NUMBER_DIGITS, number_from_text, number_in_bounds
from queue_app.models import ItemState
from queue_app.services.suggestions import (
    CONFIDENCE_PLACES,
    EXPLANATION_MAX,
    FACTOR_MAX,
    FACTOR_VALUE_MAX,
    MODEL_NAME_MAX,
    MODEL_VERSION_MAX,
    canonical_confidence,
)

# The largest request body the API reads, in bytes (a 413 beyond it). Item payloads are
# evidence for a person to read, not documents; 256 KiB is generous for that.
MAX_BODY_BYTES = 256 * 1024
# Nesting and number bounds (jsonutil.MAX_NUMBER_DIGITS, for numbers and numeric strings
# alike) keep every accepted payload storable as jsonb and renderable.
MAX_PAYLOAD_DEPTH = 32

BATCH_SIZE = (1, 200)
LEASE_SECONDS = (1, 120)
PRIORITY = (-1000, 1000)
ITEM_ID = (1, 2**63 - 1)


def _text_problem(value: str) -> str | None:
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (no lone surrogates)"
    return None


class Rules(GroupedMetadata):
    """Several pieces of pydantic metadata written as one, as in ``Annotated[str, text(1, 64)]``.

    pydantic unpacks the group where it reads the annotation, so the type checker sees a plain
    ``str`` or ``int`` and pydantic the validator and schema the group holds.
    """

    def __init__(self, *rules: object) -> None:
        self.rules = rules

    def __iter__(self) -> Iterator[object]:
        return iter(self.rules)


def bounded_int(low: int, high: int, *, strict: bool = True) -> Rules:
    """Return the rules of an int in low..high: documented in OpenAPI, checked with a 422.

    Strict by default: the schema says integer, so true, "5" and 5.0 are refused rather than
    read as 1 and 5. Only a path parameter, which is text by nature, is read leniently.
    """

    def check(value: int) -> int:
        if not low <= value <= high:
            raise PydanticCustomError(
                "out_of_range", "must be between {low} and {high}", {"low": low, "high": high}
            )
        return value

    return Rules(
        Strict(strict),
        AfterValidator(check),
        WithJsonSchema({"type": "integer", "minimum": low, "maximum": high}),
    )


# Documents the NUL refusal: PostgreSQL text cannot hold NUL, so no text field takes one.
NO_NUL_PATTERN = "^[^\\u0000]*$"


def text(min_length: int, max_length: int, pattern: str | None = None) -> Rules:
    """Return the rules of a str bounded in length (and optionally shape), documented, checked."""
    compiled = re.compile(pattern) if pattern else None
    schema: dict[str, Any] = {
        "type": "string",
        "minLength": min_length,
        "maxLength": max_length,
        "pattern": f"^{pattern}$" if pattern else NO_NUL_PATTERN,
    }

    bounds = {"low": min_length, "high": max_length}
    length_rule = (
        "must be exactly {low} characters long"
        if min_length == max_length
        else "must be between {low} and {high} characters long"
    )

    def check(value: str) -> str:
        problem = _text_problem(value)
        if problem:
            raise PydanticCustomError("invalid_text", problem)
        if not min_length <= len(value) <= max_length:
            raise PydanticCustomError("length_out_of_range", length_rule, bounds)
        if compiled and not compiled.fullmatch(value):
            raise PydanticCustomError(
                "invalid_format", "must match {pattern}", {"pattern": pattern}
            )
        return value

    return Rules(AfterValidator(check), WithJsonSchema(schema))


def _check_moment(value: datetime) -> datetime:
    problem = moment_problem(value)
    if problem:
        raise PydanticCustomError("invalid_moment", problem)
    return value


# A moment with its time zone, under the rule every time input follows (datetimes.moment_problem):
# an offset PostgreSQL reads and a year inside the stored range, refused here with a 422.
Moment = Annotated[
    AwareDatetime,
    AfterValidator(_check_moment),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "description": "ISO 8601 with a time-zone offset between -15:59 and +15:59, "
            "from 2000-01-01 to 2999-12-31 UTC.",
        }
    ),
]


def _check_payload(value: dict[str, Any]) -> dict[str, Any]:
    _walk(value, depth=1)
    return value


def _number_out_of_range() -> PydanticCustomError:
    return PydanticCustomError(
        "number_out_of_range",
        "numbers must be finite with at most {digits} digits either side of the point "
        "(numeric strings too)",
        {"digits": MAX_NUMBER_DIGITS},
    )


def _walk(value: Any, *, depth: int) -> None:
    if depth > MAX_PAYLOAD_DEPTH:
        raise PydanticCustomError(
            "too_deep", "must not nest deeper than {depth} levels", {"depth": MAX_PAYLOAD_DEPTH}
        )
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _text_problem(key)
            if problem:
                raise PydanticCustomError("invalid_text", "keys " + problem)
            _walk(item, depth=depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, depth=depth + 1)
    elif isinstance(value, str):
        problem = _text_problem(value)
        if problem:
            raise PydanticCustomError("invalid_text", "strings " + problem)
        # The console formats a numeric string as an amount, so it gets a number's bounds.
        number = number_from_text(value)
        if number is not None and not number_in_bounds(number):
            raise _number_out_of_range()
    elif isinstance(value, bool):
        pass
    elif isinstance(value, Decimal | int):
        if not number_in_bounds(value):
            raise _number_out_of_range()
    elif isinstance(value, float):
        # The exact parser never produces floats; one here means a caller bypassed it.
        raise PydanticCustomError("inexact_number", "numbers must be exact decimals")


Payload = Annotated[
    dict[str, Any],
    AfterValidator(_check_payload),
    WithJsonSchema(
        {
            "type": "object",
            "additionalProperties": True,
            "propertyNames": {"pattern": NO_NUL_PATTERN},
            "description": (
                "Evidence as a JSON object; numbers are kept exactly (decimal). Refused (422): "
                "NUL characters in any string or key, nesting deeper than "
                f"{MAX_PAYLOAD_DEPTH} levels, and numbers or numeric strings with more than "
                f"{MAX_NUMBER_DIGITS} digits either side of the point."
            ),
        }
    ),
]
Subject = Annotated[str, text(1, 500)]
QueueSlug = Annotated[str, text(1, 64)]
IdempotencyKey = Annotated[str, text(1, 200)]
SourceHash = Annotated[str, text(1, 128)]
ReasonCodeText = Annotated[str, text(1, 64)]
Note = Annotated[str, text(0, 10_000)]
EvidenceHash = Annotated[str, text(64, 64, "[0-9a-f]{64}")]
ItemId = Annotated[int, bounded_int(*ITEM_ID, strict=False)]  # a path parameter
Priority = Annotated[int, bounded_int(*PRIORITY)]
BatchSize = Annotated[int, bounded_int(*BATCH_SIZE)]
LeaseSeconds = Annotated[int, bounded_int(*LEASE_SECONDS)]
# Deadlines and subjects.
SLA_SECONDS = (1, 5 * 365 * 24 * 3600)
SlaSeconds = Annotated[int, bounded_int(*SLA_SECONDS)]
SubjectKey = Annotated[str, text(1, 200)]
SUBJECT_LIST_LIMIT = (1, 100)


# -- errors -------------------------------------------------------------------------------------


class ErrorBody(Schema):
    code: str = Field(description="Stable, machine-readable: stale_lease, out_of_range, ...")
    message: str = Field(description="Words for a person.")
    details: Any = None


class ErrorOut(Schema):
    error: ErrorBody


# -- intake -------------------------------------------------------------------------------------


# -- machine suggestions ------------------------------------------------------------------------


def _check_confidence(value: Any) -> str:
    try:
        return canonical_confidence(value)
    except InvalidSuggestion as exc:
        raise PydanticCustomError("invalid_confidence", exc.message.split(": ", 1)[-1]) from None


Confidence = Annotated[
    Any,
    AfterValidator(_check_confidence),
    WithJsonSchema(
        {
            "oneOf": [{"type": "number"}, {"type": "string"}],
            "minimum": 0,
            "maximum": 1,
            "description": "A decimal from 0 to 1, as a JSON number or a decimal string, with "
            f"at most {CONFIDENCE_PLACES} decimal places; stored and returned as a canonical "
            'decimal string ("0.930" is "0.93").',
        }
    ),
]


def _check_factor_value(value: Any) -> Any:
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem:
            raise PydanticCustomError("invalid_text", problem)
        if len(value) > FACTOR_VALUE_MAX:
            raise PydanticCustomError(
                "length_out_of_range",
                "must be at most {high} characters long",
                {"high": FACTOR_VALUE_MAX},
            )
    elif isinstance(value, bool):
        pass
    elif isinstance(value, Decimal | int):
        if not number_in_bounds(value):
            raise _number_out_of_range()
    else:
        raise PydanticCustomError("invalid_type", "must be a string, a number or a boolean")
    return value


FactorValue = Annotated[
    Any,
    AfterValidator(_check_factor_value),
    WithJsonSchema(
        {
            "oneOf": [
                {"type": "string", "maxLength": FACTOR_VALUE_MAX},
                {"type": "number"},
                {"type": "boolean"},
            ]
        }
    ),
]


class SuggestedModel(Schema):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, text(1, MODEL_NAME_MAX)]
    version: Annotated[str, text(1, MODEL_VERSION_MAX)]


class ExplanationFactor(Schema):
    model_config = ConfigDict(extra="forbid")

    factor: Annotated[str, text(1, FACTOR_MAX)]
    value: FactorValue


class SuggestionIn(Schema):
    """A model's or rules engine's suggested decision; reviewers see it as the queue says."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["approve", "reject", "escalate"] = Field(
        description="One the queue's reviewers can pick: escalate only in a queue with an "
        "escalation queue."
    )
    reason_code: ReasonCodeText = Field(
        description="One of the queue's active reason codes for that verdict."
    )
    confidence: Confidence
    model: SuggestedModel = Field(description="The model's name and version.")
    explanation: list[ExplanationFactor] | None = Field(
        None,
        max_length=EXPLANATION_MAX,
        description=f"The top factors behind it (at most {EXPLANATION_MAX}), in the order the "
        "reviewer should read them.",
    )


class SuggestionOut(Schema):
    verdict: Literal["approve", "reject", "escalate"]
    reason_code: str
    confidence: str = Field(description="A canonical decimal string from 0 to 1.")
    model: SuggestedModel
    explanation: list[ExplanationFactor] | None = None


class ItemIn(Schema):
    queue: QueueSlug
    subject: Subject
    priority: Priority = 0
    payload: Payload
    idempotency_key: IdempotencyKey
    source_hash: SourceHash
    trace_id: uuid.UUID | None = None
    due_at: Moment | None = Field(
        None,
        description="The deadline, with its time zone. Give this or sla_seconds, not both; "
        "neither: the queue's default SLA, if it has one.",
    )
    sla_seconds: SlaSeconds | None = Field(
        None, description="The deadline as seconds from receipt (instead of due_at)."
    )
    subject_key: SubjectKey | None = Field(
        None,
        description="The customer, account or merchant the item concerns: reviewers see the "
        "subject's other items, and GET /items?subject_key= lists them.",
    )
    suggestion: SuggestionIn | None = Field(
        None,
        description="A machine's suggested decision, fixed at intake and covered by the "
        "evidence hash. Refused (422, naming the field) unless its verdict and reason code are "
        "ones this queue's reviewers can choose.",
    )


class EvidenceIn(Schema):
    payload: Payload
    subject: Subject | None = None


class DecisionOut(Schema):
    id: int
    item_id: int
    verdict: str
    reason_code: str
    evidence_hash: str
    note: str
    reviewer: str
    lease_token: uuid.UUID | None
    supersedes: int | None
    corrected_verdict: str | None
    created_at: datetime
    suggestion_view: (
        Literal[
            "shown", "revealed_before_choice", "revealed_after_choice", "not_shown", "automatic"
        ]
        | None
    ) = Field(
        description="What the decision's maker saw of the item's machine suggestion: shown "
        "with the evidence, revealed on request before or after choosing a verdict, not shown, "
        "or automatic (the decision is the machine's own). null: the item has none, or an "
        "overturn."
    )
    suggestion_shown_at: datetime | None = Field(
        description="When the suggestion was first on the maker's page (null: never)."
    )
    suggestion_followed: bool | None = Field(
        description="Whether the verdict is the suggested one (null: no suggestion)."
    )
    applied: Literal["applied", "pending", "dead", "awaiting_check", "returned"] = Field(
        description="Whether the decision's effect has been carried out. awaiting_check: the "
        "queue's policy needs a second person to confirm it first (no effect until then); "
        "returned: the checker returned it, it never takes effect and the item is decided again."
    )
    applied_at: datetime | None
    status: Literal[
        "awaiting_check",
        "returned",
        "overturned",
        "superseded",
        "escalated",
        "applied",
        "confirmed",
        "pending",
    ] = Field(
        description="What became of the decision (queue_app/models/story.py). Only escalated, "
        "applied, confirmed and pending stand; the item's standing_outcome is the newest of those."
    )


# What an item's payload reads back as: the object stored, or, for a row written around intake
# so deeply nested that it cannot be read as JSON here, its stored text (jsonutil.ExactDecoder),
# which its evidence_hash covers as it is; a worker can still decide or release it. A non-object
# payload written with SQL before item_payload_is_object refused one reads back as the
# value it is, rather than failing the whole response.
StoredPayload = Annotated[
    dict[str, Any] | list[Any] | str | int | Decimal | bool | None,
    Field(
        description="The evidence object; its JSON text instead only for a payload stored "
        "around intake and nested too deeply to read."
    ),
]


class ArrivedByOut(Schema):
    """How an escalation item reached its queue (the hand-off)."""

    kind: Literal["decision", "abandoned"] = Field(
        description="`decision`: an escalate verdict on `from_item_id` opened this item; "
        "`abandoned`: this item was moved after `lease_count` leases without a decision."
    )
    at: datetime
    from_item_id: int
    from_queue: str | None
    decision_id: int | None = Field(description="The escalate verdict; null when abandoned.")
    by: list[str] = Field(
        description="Who escalated it, or who held and left it (usernames as recorded)."
    )
    reason_code: str | None
    reason: str | None
    note: str
    lease_count: int | None


# Every state an item can be in (models.ItemState); one name so no schema forgets one (an item
# awaiting its check in a list answered 500 when a schema listed only some).
ItemStateName = Literal["pending", "leased", "decided", "held", "awaiting_check"]
assert set(get_args(ItemStateName)) == set(ItemState.values), "ItemStateName != ItemState"


class EscalatedToOut(Schema):
    """An item opened by escalating this one."""

    item_id: int
    queue: str
    state: ItemStateName
    decision_id: int | None = Field(description="The escalate verdict that opened it.")


class AttachmentOut(Schema):
    name: str
    sha256: str = Field(description="sha256 of the stored bytes (after images are re-encoded).")
    content_type: Literal["image/jpeg", "image/png", "image/webp", "application/pdf"]
    size: int


class ItemOut(Schema):
    id: int
    queue: str
    state: ItemStateName
    subject: str
    priority: int
    payload: StoredPayload
    evidence_hash: str
    due_at: datetime | None = Field(
        description="The deadline (null: none); pushed back by the time the item spent on hold."
    )
    breached: bool = Field(
        description="Whether the deadline passed before the item's outcome was final (or, "
        "still open, before now). An item awaiting its check is open: its deadline runs "
        "until the check confirms the decision."
    )
    subject_key: str | None
    hold_until: datetime | None = Field(description="While on hold: when it comes back.")
    idempotency_key: str | None = Field(
        description="As sent by the client that pushed the item; null for an escalation item."
    )
    source_hash: str
    trace_id: uuid.UUID
    created_at: datetime
    evidence_updated_at: datetime | None
    decided_at: datetime | None = Field(
        description="When the item's outcome became final: its reviewer's decision, or for a "
        "decision that needs a check, the checker's confirmation (awaiting the check: the "
        "reviewer's decision)."
    )
    lease_count: int
    lease_expires: datetime | None
    leased_to_you: bool
    standing_outcome: Literal["approve", "reject", "escalate"] | None
    decisions: list[DecisionOut]
    escalated_from: list[ArrivedByOut] = Field(
        description="How this item got here: the escalate verdict or abandonment(s), oldest "
        "first; empty for an item that is not an escalation."
    )
    escalations: list[EscalatedToOut] = Field(description="Items opened by escalating this one.")
    excluded_reviewers: list[str] = Field(
        description="Who may not lease or decide this item: they decided earlier in its "
        "escalation chain, or held it before it was moved (usernames)."
    )
    attachments: list[AttachmentOut] = Field(
        default=[], description="The item's files by name; evidence_hash covers their digests."
    )
    suggestion: SuggestionOut | None = Field(
        None, description="The machine's suggested decision sent at intake (null: none)."
    )


# -- leases -------------------------------------------------------------------------------------


class LeaseRequest(Schema):
    batch_size: BatchSize = 20
    lease_seconds: LeaseSeconds = 30


class LeasedItem(Schema):
    id: int
    subject: str
    priority: int
    payload: StoredPayload
    evidence_hash: str
    trace_id: uuid.UUID
    lease_token: uuid.UUID
    lease_expires: datetime
    lease_count: int
    due_at: datetime | None = Field(description="The deadline (null: none).")
    suggestion: SuggestionOut | None = Field(
        None,
        description="The machine's suggested decision (null: none). A decision on an item "
        "with one records it as shown, now.",
    )


class LeaseOut(Schema):
    queue: str
    lease_seconds: int
    items: list[LeasedItem]


class DecisionIn(Schema):
    lease_token: uuid.UUID
    verdict: Literal["approve", "reject", "escalate"]
    reason_code: ReasonCodeText
    evidence_hash: EvidenceHash
    note: Note = ""


class ReleaseIn(Schema):
    lease_token: uuid.UUID


class ReleaseOut(Schema):
    id: int
    state: Literal["pending", "leased", "decided"]


class HoldIn(Schema):
    lease_token: uuid.UUID
    reason_code: ReasonCodeText = Field(description="One of the queue's active hold reasons.")
    hold_until: Moment = Field(
        description="When the item comes back to the queue, with its time zone: in the future "
        "and at most the queue's maximum hold from now."
    )


class HoldOut(Schema):
    id: int
    state: ItemStateName = Field(
        description="held; a retry answered after the hold ended says the item's state now."
    )
    reason_code: str
    hold_until: datetime = Field(description="When the item comes back to the queue.")
    due_at: datetime | None = Field(
        description="The deadline (null: none), already pushed back by the whole hold: the "
        "clock pauses while the item is held."
    )
    hold_ended: bool = Field(
        description="true only in the answer to a retry of a hold that has ended since: "
        "hold_until and due_at are that hold's, state is the item's now (it may be held "
        "again, by a later hold)."
    )


# -- the subject's items ---------------------------------------------------------------------------


class SubjectItemOut(Schema):
    id: int
    queue: str
    state: ItemStateName
    subject: str
    created_at: datetime
    due_at: datetime | None
    breached: bool
    decided_at: datetime | None
    standing_outcome: Literal["approve", "reject", "escalate"] | None
    reason_code: str | None
    reviewer: str | None


class SubjectItemsOut(Schema):
    subject_key: str
    items: list[SubjectItemOut] = Field(
        description="Newest first; only items in queues this client is granted."
    )
