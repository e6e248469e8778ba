"""Keep personal data out of a public statement: what the facts may say about the evidence.

A statement of reasons goes to the Commission's public database (DSA Article 24(5)) and must
carry no personal data; its facts are written from the reviewer's reason and note, and a note
quotes the evidence ("the seller Jane Doe, jane@example.com, sent IBAN ..."). Two passes, so
each misses what the other catches:

- **What the item holds.** Every value of the item's evidence (its subject, subject key, each
  string and number in the payload) is removed wherever it appears, whole and word by word: a
  note that quotes only a surname is caught as well as one that copies the whole field.
- **What looks personal whatever the item holds.** E-mail addresses, URLs with a path (a profile,
  a post), phone numbers, IBANs, handles and long digit runs (account and card numbers).

Pure: no database. Over-redaction is the accepted cost: a payload word that also appears in a
note's ordinary prose is removed too, and the statement reads a little worse, never leaks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

REDACTED = "[redacted]"
#: Words shorter than this are left alone: "a", "of", "EU" say nothing about anybody.
MIN_WORD = 3
#: Ordinary words a payload may hold that are not worth removing from the prose around them.
COMMON_WORDS = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "was",
        "were",
        "are",
        "not",
        "you",
        "your",
        "our",
        "has",
        "had",
        "have",
        "but",
        "all",
        "any",
        "can",
        "may",
        "per",
        "via",
        "who",
        "why",
        "how",
        "one",
        "two",
        "new",
        "yes",
        "none",
        "null",
        "true",
        "false",
        "post",
        "user",
        "content",
        "account",
        "item",
        "items",
        "message",
        "comment",
        "review",
        "report",
        "reported",
    }
)
_WORD = re.compile(r"[^\W_]+(?:[-_.'][^\W_]+)*", re.UNICODE)

# What looks personal whatever the item holds, most specific first.
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE), REDACTED),
    # A URL with anything past its host names someone's page; the host alone is kept.
    (re.compile(r"\b(https?://[^\s/?#]+)[/?#]\S*", re.IGNORECASE), r"\1/" + REDACTED),
    (re.compile(r"\bwww\.[^\s/]+/\S+", re.IGNORECASE), REDACTED),
    (re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b"), REDACTED),
    # Phone numbers: seven digits or more, with the usual separators.
    (re.compile(r"(?<![\w])\+?\(?\d[\d\s().-]{5,}\d(?![\w])"), REDACTED),
    (re.compile(r"(?<![\w@])@[A-Za-z0-9_.]{2,}"), REDACTED),
    # Account, card and customer numbers, alone or with a prefix (acct_123456).
    (re.compile(r"\b\w*\d{5,}\w*\b"), REDACTED),
]


def evidence_values(*, subject: str, subject_key: str | None, payload: Any) -> list[str]:
    """Return every value of an item's evidence that must not appear in a statement."""
    values = [subject, subject_key or "", *_leaves(payload)]
    return [v for v in values if v and v.strip()]


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for child in value.values():
            yield from _leaves(child)
    elif isinstance(value, (list, tuple)):
        for child in value:
            yield from _leaves(child)
    elif isinstance(value, bool) or value is None:
        return
    else:
        # Numbers too: an account id sent as 12345678 is quoted as "12345678".
        yield str(value)


def _terms(values: Iterable[str]) -> list[str]:
    terms: set[str] = set()
    for value in values:
        whole = value.strip()
        if len(whole) >= MIN_WORD:
            terms.add(whole)
        for word in _WORD.findall(value):
            if len(word) >= MIN_WORD and word.casefold() not in COMMON_WORDS:
                terms.add(word)
            # "jane.doe" also as "jane" and "doe".
            for part in re.split(r"[-_.']", word):
                if len(part) >= MIN_WORD and part.casefold() not in COMMON_WORDS:
                    terms.add(part)
    # Longest first, so a whole value goes before the words inside it.
    return sorted(terms, key=lambda t: (-len(t), t))


def redact(text: str, *, evidence: Iterable[str]) -> str:
    """Return text with every evidence value and anything that looks personal replaced."""
    # The shapes first, so an address is removed whole rather than around a name inside it.
    for pattern, replacement in PATTERNS:
        text = pattern.sub(replacement, text)
    terms = _terms(evidence)
    if terms:
        # Word boundaries where the term starts or ends with a word character, so "Ann" is
        # removed from "Ann said" but not from "annual".
        alternatives = "|".join(_bounded(term) for term in terms)
        text = re.compile(alternatives, re.IGNORECASE | re.UNICODE).sub(REDACTED, text)
    return text


def _bounded(term: str) -> str:
    escaped = re.escape(term)
    start = r"(?<!\w)" if re.match(r"\w", term) else ""
    end = r"(?!\w)" if re.search(r"\w$", term) else ""
    return f"{start}{escaped}{end}"


def leaked(text: str, *, evidence: Iterable[str]) -> list[str]:
    """Return the evidence values (whole, case-insensitive) that text still contains."""
    folded = text.casefold()
    return sorted({v for v in evidence if len(v.strip()) >= MIN_WORD and v.casefold() in folded})
