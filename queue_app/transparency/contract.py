"""The rules a statement of reasons must meet before the Transparency Database stores it.

Written from the contract notes of the Commission's API (version 1) and its enumerations, copied
into dsa_sor_enumerations.json beside this module. One validator serves the statement builder
(refuse at save time), the submitter (refuse before sending) and the stand-in server (answer 422
as the real one does), so the three cannot disagree.

A value counts as given when it is neither null, nor an empty string, nor an empty list: the real
API turns empty strings into null before its rules run, so "" is as good as absent.

Where the notes are loose this module is strict on purpose, so that a mistake is found here and
not by the Commission: a companion field (`*_other`, `source_identity`, the other decision
ground's fields) given where it does not apply is refused rather than silently dropped, list
entries may not repeat, end dates may not precede the application date, and a field the contract
does not name is refused (a typo would otherwise vanish).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from functools import cache, partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ENUMERATIONS_FILE = Path(__file__).with_name("dsa_sor_enumerations.json")

#: Statements per call of POST /api/v1/statements.
MAX_BATCH = 100

ILLEGAL = "DECISION_GROUND_ILLEGAL_CONTENT"
INCOMPATIBLE = "DECISION_GROUND_INCOMPATIBLE_CONTENT"
VOLUNTARY = "SOURCE_VOLUNTARY"

# Free-text fields and their longest allowed length, in characters.
TEXT_LIMITS: dict[str, int] = {
    "illegal_content_legal_ground": 500,
    "illegal_content_explanation": 2000,
    "incompatible_content_ground": 500,
    "incompatible_content_explanation": 2000,
    "category_specification_other": 500,
    "decision_visibility_other": 500,
    "decision_monetary_other": 500,
    "content_type_other": 500,
    "decision_facts": 5000,
    "source_identity": 500,
}

# Fields taking one value of an enumeration (the key of the data file).
CHOICES: dict[str, str] = {
    "decision_ground": "DECISION_GROUNDS",
    "category": "STATEMENT_CATEGORIES",
    "decision_monetary": "DECISION_MONETARIES",
    "decision_provision": "DECISION_PROVISIONS",
    "decision_account": "DECISION_ACCOUNTS",
    "account_type": "ACCOUNT_TYPES",
    "source_type": "SOURCE_TYPES",
    "automated_detection": "AUTOMATED_DETECTIONS",
    "automated_decision": "AUTOMATED_DECISIONS",
    "incompatible_content_illegal": "INCOMPATIBLE_CONTENT_ILLEGALS",
    "content_language": "LANGUAGES",
}

# Fields taking a list of values of an enumeration.
LISTS: dict[str, str] = {
    "category_addition": "STATEMENT_CATEGORIES",
    "category_specification": "KEYWORDS",
    "decision_visibility": "DECISION_VISIBILITIES",
    "content_type": "CONTENT_TYPES",
    "territorial_scope": "EUROPEAN_COUNTRY_CODES",
}

LAST_DATE = date(2038, 1, 1)
# Date fields and their earliest allowed day (None: no lower bound but the application date's).
DATES: dict[str, date | None] = {
    "content_date": date(2000, 1, 1),
    "application_date": date(2020, 1, 1),
    "end_date_account_restriction": None,
    "end_date_monetary_restriction": None,
    "end_date_service_restriction": None,
    "end_date_visibility_restriction": None,
}

URL_LIMIT = 500
PUID_LIMIT = 500
PUID_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
EAN13_PATTERN = re.compile(r"[0-9]{13}")
DATE_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

REQUIRED: tuple[str, ...] = (
    "decision_ground",
    "category",
    "content_type",
    "content_date",
    "application_date",
    "decision_facts",
    "source_type",
    "automated_detection",
    "automated_decision",
    "puid",
)

# The decision ground decides which pair of explanation fields is required; the other ground's
# fields must be absent.
GROUND_REQUIRED: dict[str, tuple[str, ...]] = {
    ILLEGAL: ("illegal_content_legal_ground", "illegal_content_explanation"),
    INCOMPATIBLE: ("incompatible_content_ground", "incompatible_content_explanation"),
}
GROUND_FIELDS: dict[str, tuple[str, ...]] = {
    ILLEGAL: GROUND_REQUIRED[ILLEGAL],
    INCOMPATIBLE: (*GROUND_REQUIRED[INCOMPATIBLE], "incompatible_content_illegal"),
}

#: The four kinds of restriction; a statement names at least one.
RESTRICTIONS: tuple[str, ...] = (
    "decision_visibility",
    "decision_monetary",
    "decision_provision",
    "decision_account",
)

# (field, its "other" value, the free-text field that must then say what): required with that
# value, refused without it.
OTHER_COMPANIONS: tuple[tuple[str, str, str], ...] = (
    ("decision_visibility", "DECISION_VISIBILITY_OTHER", "decision_visibility_other"),
    ("decision_monetary", "DECISION_MONETARY_OTHER", "decision_monetary_other"),
    ("content_type", "CONTENT_TYPE_OTHER", "content_type_other"),
    ("category_specification", "KEYWORD_OTHER", "category_specification_other"),
)

FIELDS: frozenset[str] = frozenset(
    (*TEXT_LIMITS, *CHOICES, *LISTS, *DATES, "decision_ground_reference_url", "content_id", "puid")
)

# An enumeration this short is listed whole in a refusal; a longer one is named.
_LIST_VALUES_UP_TO = 8

Errors = dict[str, list[str]]
Refuse = Callable[[str], None]
RefuseField = Callable[[str, str], None]


@cache
def enumerations() -> dict[str, tuple[str, ...]]:
    """Return the allowed values of every enumeration, read once from the data file."""
    raw = json.loads(ENUMERATIONS_FILE.read_text(encoding="utf-8"))
    return {name: tuple(values) for name, values in raw.items() if not name.startswith("_")}


@cache
def labels(enumeration: str) -> dict[str, str]:
    """Return an enumeration's official labels by value (a value is its own label in lists)."""
    raw = json.loads(ENUMERATIONS_FILE.read_text(encoding="utf-8"))[enumeration]
    return dict(raw) if isinstance(raw, dict) else {value: value for value in raw}


def given(value: Any) -> bool:
    """Say whether a field's value counts as present (null, "" and [] do not)."""
    return value is not None and value != "" and value != []


def validate_statement(statement: Mapping[str, Any]) -> Errors:
    """Return the reasons each field of one statement breaks the contract (empty when valid)."""
    errors: Errors = {}
    if not isinstance(statement, Mapping):
        return {"statement": ["must be a JSON object of fields"]}

    def refuse(field: str, reason: str) -> None:
        errors.setdefault(field, []).append(reason)

    for field in sorted(set(statement) - FIELDS, key=str):
        refuse(str(field), "is not a field of a statement of reasons")
    for field in REQUIRED:
        if not given(statement.get(field)):
            refuse(field, "is required")

    for field, limit in TEXT_LIMITS.items():
        if given(statement.get(field)):
            _check_text(statement[field], limit, partial(refuse, field))
    for field, enumeration in CHOICES.items():
        if given(statement.get(field)):
            _check_choice(statement[field], enumeration, partial(refuse, field))
    for field, enumeration in LISTS.items():
        if field in statement and statement[field] is not None:
            _check_list(statement[field], enumeration, partial(refuse, field))
    parsed_dates: dict[str, date] = {}
    for field, earliest in DATES.items():
        if given(statement.get(field)):
            day = _check_date(statement[field], earliest, partial(refuse, field))
            if day is not None:
                parsed_dates[field] = day
    if given(statement.get("decision_ground_reference_url")):
        _check_url(
            statement["decision_ground_reference_url"],
            partial(refuse, "decision_ground_reference_url"),
        )
    if given(statement.get("content_id")):
        _check_content_id(statement["content_id"], partial(refuse, "content_id"))
    if given(statement.get("puid")):
        _check_puid(statement["puid"], partial(refuse, "puid"))

    _check_ground(statement, refuse)
    _check_restrictions(statement, refuse)
    _check_companions(statement, refuse)
    if statement.get("source_type") == VOLUNTARY and given(statement.get("source_identity")):
        refuse(
            "source_identity",
            f"must be absent when source_type is {VOLUNTARY}: there is no notifier to name",
        )
    application = parsed_dates.get("application_date")
    for field, day in parsed_dates.items():
        if field.startswith("end_date_") and application is not None and day < application:
            refuse(field, f"must not be before application_date ({application.isoformat()})")
    return errors


def validate_partial(values: Mapping[str, Any], *, required: Iterable[str] = ()) -> Errors:
    """Return the errors of the fields given (and of `required`), for part of a statement.

    For what is set before a decision exists (a queue's mapping of a reason code: ground,
    category, keywords, legal ground, reference URL): the rules between the fields given still
    apply, the fields a full statement needs and the part leaves out are not asked for.
    """
    if not isinstance(values, Mapping):
        return validate_statement(values)
    wanted = set(values) | set(required)
    return {field: why for field, why in validate_statement(values).items() if field in wanted}


def duplicate_puids(statements: list[Any]) -> list[str]:
    """Return the PUIDs that occur more than once among statements, in first-seen order."""
    seen: dict[str, int] = {}
    for statement in statements:
        if isinstance(statement, Mapping) and isinstance(statement.get("puid"), str):
            seen[statement["puid"]] = seen.get(statement["puid"], 0) + 1
    return [puid for puid, count in seen.items() if count > 1]


def validate_batch(statements: Any) -> Errors:
    """Return what is wrong with a body's `statements` for the batch endpoint (empty when valid).

    A statement's field errors are keyed `statements.N.field` (N from 0), as the API reports
    them; PUIDs repeated inside the batch are reported under `puid`.
    """
    if not isinstance(statements, list):
        return {"statements": ["must be a list of statements"]}
    if not statements:
        return {"statements": ["must hold at least 1 statement"]}
    if len(statements) > MAX_BATCH:
        return {
            "statements": [
                f"must hold at most {MAX_BATCH} statements (it has {len(statements)}): "
                "send them in several calls"
            ]
        }
    errors: Errors = {}
    for index, statement in enumerate(statements):
        for field, reasons in validate_statement(statement).items():
            errors[f"statements.{index}.{field}"] = reasons
    repeated = duplicate_puids(statements)
    if repeated:
        errors["puid"] = [
            "each statement's puid must be unique within the call; repeated: " + ", ".join(repeated)
        ]
    return errors


def describe(errors: Mapping[str, list[str]]) -> str:
    """Return field errors as one readable line per field, for an operator."""
    return "\n".join(f"{field}: {'; '.join(reasons)}" for field, reasons in errors.items())


# -- one check per kind of field; each reports through `refuse(reason)` ---------------------------


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed(enumeration: str) -> str:
    values = enumerations()[enumeration]
    if len(values) <= _LIST_VALUES_UP_TO:
        return "one of " + ", ".join(values)
    return f"one of the {len(values)} values of {enumeration}"


def _check_text(value: Any, limit: int, refuse: Refuse) -> None:
    if not isinstance(value, str):
        refuse(f"must be text, not {type(value).__name__}")
    elif len(value) > limit:
        refuse(f"must be at most {limit} characters (it has {len(value)})")


def _check_choice(value: Any, enumeration: str, refuse: Refuse) -> None:
    if not isinstance(value, str) or value not in enumerations()[enumeration]:
        refuse(f"must be {_allowed(enumeration)}; got {_shown(value)}")


def _check_list(value: Any, enumeration: str, refuse: Refuse) -> None:
    if not isinstance(value, list):
        refuse(f"must be a list of values ({_allowed(enumeration)}), not {type(value).__name__}")
        return
    allowed = enumerations()[enumeration]
    wrong = [entry for entry in value if not isinstance(entry, str) or entry not in allowed]
    if wrong:
        refuse(
            f"must list only {_allowed(enumeration)}; not allowed: "
            + ", ".join(_shown(entry) for entry in wrong)
        )
    repeated = sorted(
        {entry for entry in value if isinstance(entry, str) and value.count(entry) > 1}
    )
    if repeated:
        refuse("must not list a value twice; repeated: " + ", ".join(repeated))


def _check_date(value: Any, earliest: date | None, refuse: Refuse) -> date | None:
    if not isinstance(value, str) or not DATE_PATTERN.fullmatch(value):
        refuse(f"must be a date written YYYY-MM-DD; got {_shown(value)}")
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        refuse(f"must be a real calendar date; got {_shown(value)}")
        return None
    if earliest is not None and day < earliest:
        refuse(f"must be on or after {earliest.isoformat()}; got {value}")
    if day > LAST_DATE:
        refuse(f"must be on or before {LAST_DATE.isoformat()}; got {value}")
    return day


def _check_url(value: Any, refuse: Refuse) -> None:
    if not isinstance(value, str):
        refuse(f"must be a URL as text, not {type(value).__name__}")
        return
    if len(value) > URL_LIMIT:
        refuse(f"must be at most {URL_LIMIT} characters (it has {len(value)})")
    try:
        parts = urlsplit(value)
        has_host = bool(parts.hostname)
    except ValueError:
        parts, has_host = None, False
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not has_host
        or any(ch.isspace() or ord(ch) < 32 for ch in value)
    ):
        refuse(
            f"must be an absolute http(s) URL of the terms or law relied on; got {_shown(value)}"
        )


def _check_content_id(value: Any, refuse: Refuse) -> None:
    if not isinstance(value, Mapping) or set(value) != {"EAN-13"}:
        refuse('must be {"EAN-13": "<13 digits>"} (the only identifier the API takes)')
    elif not isinstance(value["EAN-13"], str) or not EAN13_PATTERN.fullmatch(value["EAN-13"]):
        refuse(f"EAN-13 must be exactly 13 digits, as text; got {_shown(value['EAN-13'])}")


def _check_puid(value: Any, refuse: Refuse) -> None:
    if not isinstance(value, str):
        refuse(f"must be text, not {type(value).__name__}")
        return
    if len(value) > PUID_LIMIT:
        refuse(f"must be at most {PUID_LIMIT} characters (it has {len(value)})")
    if not PUID_PATTERN.fullmatch(value):
        bad = sorted({ch for ch in value if not PUID_PATTERN.fullmatch(ch)})
        refuse(
            "may hold only letters A-Z and a-z, digits, '_' and '-'; not allowed: "
            + " ".join(repr(ch) for ch in bad)
        )


def _check_ground(statement: Mapping[str, Any], refuse: RefuseField) -> None:
    ground = statement.get("decision_ground")
    if ground not in GROUND_REQUIRED:
        return  # missing or unknown: already refused, and which fields belong is unknown
    for field in GROUND_REQUIRED[ground]:
        if not given(statement.get(field)):
            refuse(field, f"is required when decision_ground is {ground}")
    for other, fields in GROUND_FIELDS.items():
        if other == ground:
            continue
        for field in fields:
            if given(statement.get(field)):
                refuse(
                    field, f"must be absent when decision_ground is {ground} (it is for {other})"
                )


def _check_restrictions(statement: Mapping[str, Any], refuse: RefuseField) -> None:
    if not any(given(statement.get(field)) for field in RESTRICTIONS):
        for field in RESTRICTIONS:
            refuse(field, "at least one of " + ", ".join(RESTRICTIONS) + " is required")


def _check_companions(statement: Mapping[str, Any], refuse: RefuseField) -> None:
    for field, other_value, companion in OTHER_COMPANIONS:
        value = statement.get(field)
        chosen = other_value in value if isinstance(value, list) else value == other_value
        if chosen and not given(statement.get(companion)):
            refuse(companion, f"is required when {field} is {other_value}: say what it is")
        elif not chosen and given(statement.get(companion)):
            refuse(companion, f"must be absent unless {field} is {other_value}")
