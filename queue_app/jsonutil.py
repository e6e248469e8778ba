"""JSON that keeps numbers exact: decimals in, decimals out, never a float in between.

A reconciliation variance of 12345678901234.57 must reach the reviewer's screen, the evidence
hash and the decision log digit for digit. PostgreSQL's jsonb stores numbers as numeric, so
the only places precision can be lost are Python's json encoder and decoder; these replace both.
"""

from __future__ import annotations

import datetime
import json
import uuid
from decimal import Decimal
from typing import Any


class ExactDecoder(json.JSONDecoder):
    """Decode JSON numbers with a fraction or exponent as Decimal instead of float."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("parse_float", Decimal)
        super().__init__(*args, **kwargs)


def exact_loads(text: str | bytes) -> Any:
    """Parse JSON text, keeping non-integer numbers as Decimal."""
    return json.loads(text, cls=ExactDecoder)


def _encode(obj: Any, out: list[str], *, sort_keys: bool, decimals_as_strings: bool) -> None:
    if obj is None or isinstance(obj, bool):
        out.append(json.dumps(obj))
    elif isinstance(obj, str):
        out.append(json.dumps(obj, ensure_ascii=False))
    elif isinstance(obj, int):
        out.append(str(obj))
    elif isinstance(obj, Decimal):
        if not obj.is_finite():
            raise ValueError(f"{obj} is not a JSON number")
        out.append(json.dumps(str(obj)) if decimals_as_strings else str(obj))
    elif isinstance(obj, float):
        # A float that reached us is already rounded; keep its shortest repr rather than guess.
        if obj != obj or obj in (float("inf"), float("-inf")):
            raise ValueError(f"{obj} is not a JSON number")
        as_decimal = Decimal(repr(obj))
        out.append(json.dumps(str(as_decimal)) if decimals_as_strings else repr(obj))
    elif isinstance(obj, dict):
        items = obj.items()
        if sort_keys:
            items = sorted(items, key=lambda kv: str(kv[0]))
        out.append("{")
        for i, (key, value) in enumerate(items):
            if i:
                out.append(",")
            out.append(json.dumps(str(key), ensure_ascii=False))
            out.append(":")
            _encode(value, out, sort_keys=sort_keys, decimals_as_strings=decimals_as_strings)
        out.append("}")
    elif isinstance(obj, (list, tuple)):
        out.append("[")
        for i, value in enumerate(obj):
            if i:
                out.append(",")
            _encode(value, out, sort_keys=sort_keys, decimals_as_strings=decimals_as_strings)
        out.append("]")
    elif isinstance(obj, (datetime.datetime, datetime.date)):
        out.append(json.dumps(obj.isoformat()))
    elif isinstance(obj, uuid.UUID):
        out.append(json.dumps(str(obj)))
    else:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def exact_dumps(obj: Any, *, sort_keys: bool = False, decimals_as_strings: bool = False) -> str:
    """Serialise to compact JSON, writing Decimal values digit for digit."""
    out: list[str] = []
    _encode(obj, out, sort_keys=sort_keys, decimals_as_strings=decimals_as_strings)
    return "".join(out)


class ExactEncoder(json.JSONEncoder):
    """json.JSONEncoder front for exact_dumps, for Django's JSONField(encoder=...)."""

    def encode(self, o: Any) -> str:
        return exact_dumps(o)

    def iterencode(self, o: Any, _one_shot: bool = False):  # type: ignore[override]
        yield exact_dumps(o)
