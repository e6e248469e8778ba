"""Hostile input for the fuzz tests: wrong types, huge and odd unicode, NUL, missing, duplicated."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Bounded so every fuzz test together stays well under a minute on the shared machine; the
# savepoint per example keeps each one independent of the last.
FUZZ = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

MISSING = object()

odd_characters = st.sampled_from(
    ["\x00", "\u202e", "\ufeff", "\u200b", "é", "\U0001f600", "\n", "'", '"', "<", "%", "\\"]
)
huge = st.builds(
    lambda c, n: c * n, st.sampled_from(["a", "é", "\x00", "7"]), st.integers(1, 300_000)
)
odd_text = st.one_of(
    st.text(max_size=40),
    st.lists(odd_characters, max_size=12).map("".join),
    huge,
    st.integers().map(str),
    st.just(""),
)


def form_field(good: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """A form value as a browser or a script could post it: good, odd, missing or repeated."""
    single = st.one_of(good, odd_text)
    return st.one_of(single, st.just(MISSING), st.lists(single, min_size=2, max_size=3))


def form(**fields: Any) -> dict[str, Any]:
    """Drop missing fields; lists become repeated fields (the test client repeats them)."""
    return {name: value for name, value in fields.items() if value is not MISSING}


def json_value(*, depth: int = 3) -> st.SearchStrategy[Any]:
    """Any JSON value, including the ones a schema does not expect."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.text(max_size=30),
        st.lists(odd_characters, max_size=8).map("".join),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=depth * 4,
    )


def json_field(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(good, json_value(), huge, st.just(MISSING))
