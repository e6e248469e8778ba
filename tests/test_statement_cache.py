"""psycopg parses each hot statement's placeholders once per process, not on every run.

psycopg caches that parse only for statements up to a length limit; the claim is longer than
its default, and re-parsing it on every Next item cost a tenth of the cycle's client CPU
(queue_app/db/psycopg_internals.py, STATEMENT_CACHE_LIMIT).
"""

from __future__ import annotations

from django.db import connection
from psycopg import _queries

from queue_app.db import psycopg_internals, runner, statements
from queue_app.db.statements import leases as leases_sql
from queue_app.services import claim_next
from tests.conftest import make_items


def test_every_named_statement_fits_the_cache_limit():
    too_long = {
        name: len(text.encode())
        for name, text in statements.all_statements().items()
        if len(text.encode()) > psycopg_internals.STATEMENT_CACHE_LIMIT
    }
    assert not too_long, f"raise STATEMENT_CACHE_LIMIT or shorten: {too_long}"
    assert _queries.MAX_CACHED_STATEMENT_LENGTH >= psycopg_internals.STATEMENT_CACHE_LIMIT


def test_the_claim_is_longer_than_psycopgs_default_limit():
    # What the setting is for: without it this statement would miss the cache every time.
    assert len(leases_sql.CLAIM_NEXT_ITEM.encode()) > 4096


def test_a_second_claim_reuses_the_parse_of_the_first(queue, alice, bob):
    make_items(queue, 3)
    claim_next(queue=queue, reviewer=alice)
    before = _queries._query2pg.cache_info()
    calls_uncached = []
    original = _queries._query2pg_nocache

    def spy(query, encoding):
        calls_uncached.append(query[:40])
        return original(query, encoding)

    _queries._query2pg_nocache = spy
    try:
        assert claim_next(queue=queue, reviewer=bob) is not None
    finally:
        _queries._query2pg_nocache = original
    after = _queries._query2pg.cache_info()
    assert calls_uncached == []  # nothing parsed outside the cache
    assert after.hits > before.hits
    assert after.misses == before.misses  # every statement of the claim was already parsed


def test_column_names_follow_the_table_as_it_is_now(db):
    statement = "SELECT * FROM pg_temp.widened"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE widened (a int)")
        cursor.execute("INSERT INTO widened VALUES (1)")
    assert runner.fetch_prepared(statement, {}) == [{"a": 1}]
    # The same text with another shape (a column added since) is read afresh, not misnamed.
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE widened ADD COLUMN b text DEFAULT 'x'")
    assert runner.run_together([(statement, {})]) == [(("a", "b"), [(1, "x")])]
