"""Word-prefix search of item subjects: the expression the GIN index holds, and the query.

A substring search (`subject ILIKE '%ann%'`) reads every item: no index of the embedded
PostgreSQL serves it (it has no pg_trgm). Full-text search with the 'simple' configuration (no
stemming, no stop words, lower-cased) and prefix terms finds the words of a subject that start
with what was typed, from the GIN index item_subject_words, at any size of the history.

The planner uses that index only for the very expression it holds, so both the index and every
query build it from SubjectWords below, with the configuration written into the SQL.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.postgres.search import SearchQueryField, SearchVectorField
from django.db.models import BooleanField, Expression, F, Func, Value

# Letters and digits only: every tsquery operator (& | ! ( ) < > : * ' \ and the rest) is a
# separator, so no term can make to_tsquery fail.
_WORD = re.compile(r"[^\W_]+")
# A term is a few words; more add nothing but work.
MAX_WORDS = 8
# Well under the 2,047 characters a lexeme may have.
MAX_WORD_LENGTH = 100

SEARCH_HELP = (
    "words starting with each word typed, in any order "
    "(e.g. 'ann smi' finds 'Smith, Anne'; punctuation separates words)"
)


class SubjectWords(Func):
    """to_tsvector('simple', subject): the words of a subject, as item_subject_words holds them."""

    function = "to_tsvector"
    template = "%(function)s('simple'::regconfig, %(expressions)s)"
    output_field = SearchVectorField()


class _WordPrefixes(Func):
    function = "to_tsquery"
    template = "%(function)s('simple'::regconfig, %(expressions)s)"
    output_field = SearchQueryField()


class _Matches(Func):
    template = "%(expressions)s"
    arg_joiner = " @@ "
    output_field = BooleanField()


def prefix_query(term: str) -> str | None:
    """Return the tsquery text of every word of term as a prefix ('ann smi' -> 'ann:* & smi:*').

    None when the term has no letter or digit: there is nothing to look for. A single letter
    is left out when a longer word is there ('J. Smith' looks for 'smith:*'): as a prefix it
    matches every word that starts with that letter, so the index would read a twentieth of
    all subjects to narrow nothing the other words do not. A digit stays: 'applicant 1' means
    the number.
    """
    words = _WORD.findall(term)
    if any(len(word) > 1 for word in words):
        words = [word for word in words if len(word) > 1 or word.isdigit()]
    words = words[:MAX_WORDS]
    if not words:
        return None
    return " & ".join(f"{word[:MAX_WORD_LENGTH]}:*" for word in words)


def subject_has_words(term: str, subject: str = "subject") -> Expression | None:
    """Return a filter: the subject (a field path) has a word starting with each word of term.

    None when the term has no word; the caller decides what an empty search shows.
    """
    query = prefix_query(term)
    if query is None:
        return None
    words: Any = SubjectWords(F(subject))
    return _Matches(words, _WordPrefixes(Value(query)))
