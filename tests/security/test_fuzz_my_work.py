"""Hostile searches on My work: never a 5xx, never a write, never another reviewer's decision."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.security.conftest import World
from tests.security.ledger import rolled_back
from tests.security.strategies import odd_text
from tests.security.test_fuzz_console import FIXED

pytestmark = pytest.mark.django_db

values = st.one_of(
    odd_text,
    st.sampled_from(["2026-11-30", "2026-02-30", "0000-01-01", "9999-12-31", "-1", "0", "1"]),
    st.integers().map(str),
    st.just("9" * 40),
)


@settings(FIXED, max_examples=60)
@given(subject=values, item=values, day=values, who=st.sampled_from(["reviewer", "stranger"]))
def test_my_work_search_survives_hostile_queries(world: World, subject, item, day, who):
    client = world.client(who)
    with rolled_back() as change:
        response = client.get("/my-work/", {"subject": subject, "item": item, "day": day})
    assert change.nothing
    if "\x00" in subject + item + day:
        # Refused at the edge for every page (RefuseNulMiddleware), in words.
        assert response.status_code == 400 and b"NUL" in response.content
        return
    assert response.status_code == 200, response.content[:300]
    results = response.context["results"] or []
    # Bob's decisions are in the world; nobody else's search ever lists them.
    assert all(d.reviewer_id == world.users[who].pk for d in results)
