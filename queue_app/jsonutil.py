"""JSON that keeps numbers exact: decimals in, decimals out, never a float in between.

A reconciliation variance of 12345678901234.57 must reach the reviewer's screen, the evidence
hash and the decision log digit for digit. PostgreSQL's jsonb stores numbers as numeric, so
the only places precision can be lost are Python's json encoder and decoder; these replace both.
"""

from __future__ import annotations

import datetime
import json
import re
import uuid
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

# The most digits a number may have on either side of the point, whether it arrives as a JSON
# number or as a numeric string. PostgreSQL numeric holds far more, but a number outside this
# is a mistake, not evidence, and "1e999999" would be nine bytes in and 1.3 million out.
MAX_NUMBER_DIGITS = 1000

# A string that is a plain decimal number: what the console formats as an amount. ASCII digits
# only: Decimal() also reads "1_000" and Arabic-Indic digits, which a reviewer should see as
# they were sent, not rewritten.
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def number_in_bounds(number: Decimal | int) -> bool:
    """Return whether a number is finite with at most MAX_NUMBER_DIGITS either side of the point."""
    if isinstance(number, int):
        number = Decimal(number)
    if not number.is_finite():
        return False
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite numbers have an int exponent
    return number.adjusted() < MAX_NUMBER_DIGITS and -exponent <= MAX_NUMBER_DIGITS


def number_from_text(text: str) -> Decimal | None:
    """Return the Decimal a plain numeric string spells (bounds not applied), else None."""
    stripped = text.strip()
    # Longer than any sensibly written in-bounds number: text, and not worth parsing.
    if len(stripped) > 4 * MAX_NUMBER_DIGITS or not _NUMBER_TEXT.fullmatch(stripped):
        return None
    try:
        return Decimal(stripped)
    except InvalidOperation:  # the pattern admits only what Decimal reads; be safe anyway
        return None


def _parse_int(text: str) -> int | Decimal:
    try:
        return int(text)
    except ValueError:
        # Past sys.get_int_max_str_digits() int() refuses; jsonb stores such integers happily,
        # and one must not make its whole row unreadable. Decimal has no such limit.
        return Decimal(text)


class ExactDecoder(json.JSONDecoder):
    """Decode JSON numbers with a fraction or exponent as Decimal instead of float."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("parse_float", Decimal)
        kwargs.setdefault("parse_int", _parse_int)
        super().__init__(*args, **kwargs)

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        """Decode, reporting nesting too deep for Python's parser as a JSONDecodeError."""
        try:
            return super().decode(s, *args, **kwargs)
        except RecursionError:
            # jsonb nests far deeper than Python's recursive parser can follow. As a decode
            # error, Django's JSONField hands the stored text back as it is (a str) instead of
            # failing every query that reads the row: the console shows it as text.
            raise json.JSONDecodeError("nested too deeply to decode", s, 0) from None


def exact_loads(text: str | bytes) -> Any:
    """Parse JSON text, keeping non-integer numbers as Decimal."""
    return json.loads(text, cls=ExactDecoder)


def stored_loads(text: str) -> Any:
    """Decode jsonb text as a JSONField(decoder=ExactDecoder) does: the text itself if it can't."""
    try:
        return exact_loads(text)
    except json.JSONDecodeError:
        return text


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
        items: Iterable[tuple[Any, Any]] = obj.items()
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

    def iterencode(self, o: Any, _one_shot: bool = False) -> Iterator[str]:
        yield exact_dumps(o)
