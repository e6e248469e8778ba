"""Write a statement of reasons from a queue's policy, a reason's mapping and a decision's facts.

Pure: it reads the instances it is given and no database, so the admin can build a sample
statement from a policy and mapping being saved (and run the contract on it) exactly as the
apply worker builds the real one. The facts are the mapping's explanation template filled with
the reason and the reviewer's note, the note redacted first (transparency/redaction.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from queue_app.transparency.redaction import redact

ILLEGAL = "DECISION_GROUND_ILLEGAL_CONTENT"
INCOMPATIBLE = "DECISION_GROUND_INCOMPATIBLE_CONTENT"
FULLY = "AUTOMATED_DECISION_FULLY"
PARTIALLY = "AUTOMATED_DECISION_PARTIALLY"
NOT_AUTOMATED = "AUTOMATED_DECISION_NOT_AUTOMATED"
VOLUNTARY = "SOURCE_VOLUNTARY"
#: A note longer than this is cut: the explanation it goes into takes at most 2,000 characters.
NOTE_MAX = 1500
#: What an upstream item may set for itself at intake (payload["dsa"]): values of enumerations
#: the contract checks, never free text, so nothing personal comes in this way.
ITEM_OVERRIDES = ("territorial_scope", "content_type", "content_language", "content_date")
OVERRIDE_KEY = "dsa"
# Anything in braces is a placeholder, so "{item.subject}" is refused, not left as text.
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
PUID_PLACEHOLDERS = ("queue", "decision_id", "item_id")
EXPLANATION_PLACEHOLDERS = ("reason", "reason_code", "note", "queue")


class TemplateError(ValueError):
    """A template names a placeholder it may not."""


def fill(template: str, values: dict[str, str]) -> str:
    """Fill {name} placeholders from values; refuse any other (no attribute or index access)."""
    unknown = sorted({name for name in _PLACEHOLDER.findall(template) if name not in values})
    if unknown:
        allowed = ", ".join("{" + name + "}" for name in values)
        raise TemplateError(f"Unknown placeholder {{{unknown[0]}}}; use {allowed}.")
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def puid(template: str, *, queue: str, decision_id: int, item_id: int) -> str:
    """Return a statement's PUID from the policy's scheme."""
    return fill(
        template, {"queue": queue, "decision_id": str(decision_id), "item_id": str(item_id)}
    )


@dataclass(frozen=True)
class Facts:
    """What one decision contributes to its statement."""

    queue: str
    decision_id: int
    item_id: int
    reason_code: str
    reason_label: str
    note: str
    application_date: date
    content_date: date
    automated_detection: bool
    automated_decision: str
    # Values of the item's evidence: none may appear in the statement.
    evidence: tuple[str, ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)


def explanation(mapping: Any, facts: Facts) -> str:
    """Return the facts relied on: the mapping's template over the reason and redacted note."""
    note = redact(facts.note.strip(), evidence=facts.evidence)
    if len(note) > NOTE_MAX:
        note = note[: NOTE_MAX - 1] + "…"
    text = fill(
        mapping.explanation_template,
        {
            "reason": facts.reason_label,
            "reason_code": facts.reason_code,
            "note": note,
            "queue": facts.queue,
        },
    )
    # Once more over the whole: a template or label that quotes the evidence is caught too.
    return redact(text, evidence=facts.evidence).strip()


def restriction_statement(policy: Any, mapping: Any, facts: Facts) -> dict[str, Any]:
    """Return the statement of a restricting decision, as the contract describes it."""
    text = explanation(mapping, facts)
    statement: dict[str, Any] = {
        "decision_ground": mapping.decision_ground,
        "category": mapping.category,
        "content_type": list(policy.content_type),
        "content_date": facts.content_date.isoformat(),
        "application_date": facts.application_date.isoformat(),
        "decision_facts": text,
        "source_type": policy.source_type,
        "automated_detection": "Yes" if facts.automated_detection else "No",
        "automated_decision": facts.automated_decision,
        "puid": puid(
            policy.puid_template,
            queue=facts.queue,
            decision_id=facts.decision_id,
            item_id=facts.item_id,
        ),
    }
    if mapping.decision_ground == ILLEGAL:
        statement["illegal_content_legal_ground"] = mapping.ground
        statement["illegal_content_explanation"] = text
    else:
        statement["incompatible_content_ground"] = mapping.ground
        statement["incompatible_content_explanation"] = text
        if mapping.incompatible_content_illegal:
            statement["incompatible_content_illegal"] = mapping.incompatible_content_illegal
    _put(statement, "category_addition", list(mapping.category_addition))
    _put(statement, "category_specification", list(mapping.keywords))
    _put(statement, "category_specification_other", mapping.keyword_other)
    _put(statement, "decision_ground_reference_url", mapping.reference_url)
    _put(statement, "content_type_other", policy.content_type_other)
    _put(statement, "content_language", policy.content_language)
    _put(statement, "territorial_scope", list(policy.territorial_scope))
    _put(statement, "account_type", policy.account_type)
    if policy.source_type != VOLUNTARY:
        _put(statement, "source_identity", policy.source_identity)
    ends = (
        facts.application_date + policy.restriction_duration
        if policy.restriction_duration
        else None
    )
    for kind, end_field in (
        ("visibility", "end_date_visibility_restriction"),
        ("monetary", "end_date_monetary_restriction"),
        ("provision", "end_date_service_restriction"),
        ("account", "end_date_account_restriction"),
    ):
        value = getattr(policy, f"decision_{kind}")
        if value:
            statement[f"decision_{kind}"] = list(value) if kind == "visibility" else value
            if ends is not None:
                statement[end_field] = ends.isoformat()
    _put(statement, "decision_visibility_other", policy.decision_visibility_other)
    _put(statement, "decision_monetary_other", policy.decision_monetary_other)
    for key in ITEM_OVERRIDES:
        if key in facts.overrides:
            statement[key] = facts.overrides[key]
    return statement


def lifted_statement(policy: Any, facts: Facts, *, replaces_puid: str) -> dict[str, Any]:
    """Return the record of an overturn that lifted a restriction, naming its statement."""
    note = redact(facts.note.strip(), evidence=facts.evidence)[:NOTE_MAX]
    return {
        "puid": puid(
            policy.puid_template,
            queue=facts.queue,
            decision_id=facts.decision_id,
            item_id=facts.item_id,
        ),
        "replaces_puid": replaces_puid,
        "restriction_lifted": True,
        "application_date": facts.application_date.isoformat(),
        "decision_facts": redact(f"{facts.reason_label}. {note}", evidence=facts.evidence),
        "automated_detection": "Yes" if facts.automated_detection else "No",
        "automated_decision": facts.automated_decision,
    }


def _put(statement: dict[str, Any], key: str, value: Any) -> None:
    # Optional fields are left out when empty: the contract reads "" as a value given.
    if value:
        statement[key] = value


def overrides_of(payload: Any) -> dict[str, Any]:
    """Return what an item's payload sets for its own statement (payload["dsa"])."""
    given = payload.get(OVERRIDE_KEY) if isinstance(payload, dict) else None
    if not isinstance(given, dict):
        return {}
    return {key: given[key] for key in ITEM_OVERRIDES if key in given}


def without_overrides(payload: Any) -> Any:
    """Return the payload without its overrides: enumeration values, not evidence to redact."""
    if isinstance(payload, dict) and OVERRIDE_KEY in payload:
        return {k: v for k, v in payload.items() if k != OVERRIDE_KEY}
    return payload
