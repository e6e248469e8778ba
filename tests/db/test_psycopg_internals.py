"""What the database layer relies on inside psycopg, beyond its public API.

The statement runner reaches into psycopg where its public API has no knob, and only where
the benchmark the mechanism serves showed it pays: the parse cache's length limit (client CPU
of every claim) and the private autocommit flag (no round trip for psycopg's own BEGIN). Each
test names one private piece, checks it still has the shape the runner uses and that setting
it still has the effect the runner wants. A psycopg upgrade that changes either fails here,
not as a quiet slowdown or an extra round trip.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from psycopg import _queries
from psycopg.adapt import Transformer


def _long_statement() -> str:
    # Longer than psycopg's own limit, as the claim is (about 8 KiB).
    return "SELECT %(a)s::int AS a" + " " * 6000


def test_the_statement_cache_limit_is_a_module_setting_read_on_every_parse():
    assert isinstance(_queries.MAX_CACHED_STATEMENT_LENGTH, int)
    assert isinstance(_queries.MAX_CACHED_STATEMENT_PARAMS, int)
    assert hasattr(_queries._query2pg, "cache_info")  # the cached parse is an lru_cache


@pytest.mark.parametrize(("limit", "cached"), [(4096, False), (16 * 1024, True)])
def test_raising_the_limit_caches_the_parse_of_a_long_statement(monkeypatch, limit, cached):
    monkeypatch.setattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", limit)
    statement = _long_statement() + f"-- {limit}"  # a text no other test parsed
    before = _queries._query2pg.cache_info()
    for _ in range(3):
        _queries.PostgresQuery(Transformer()).convert(statement, {"a": 1})
    after = _queries._query2pg.cache_info()
    if cached:
        assert (after.misses - before.misses, after.hits - before.hits) == (1, 2)
    else:
        assert (after.misses, after.hits) == (before.misses, before.hits)


@pytest.fixture
def raw_connection(db):
    """A psycopg connection set up as Django sets up its own, outside any transaction."""
    conn = connection.get_new_connection(connection.get_connection_params())
    yield conn
    conn.close()


def _sent(monkeypatch) -> list[bytes]:
    """Record every command a pipeline writes: its text, or b"Sync"."""
    from psycopg import _pipeline_base

    sent: list[bytes] = []
    communicate = _pipeline_base.pipeline_communicate

    def recording(pgconn, commands):
        sent.extend(c.args[0] if getattr(c, "args", None) else b"Sync" for c in commands)
        return (yield from communicate(pgconn, commands))

    monkeypatch.setattr(_pipeline_base, "pipeline_communicate", recording)
    return sent


def test_psycopgs_own_begin_in_a_pipeline_brings_a_sync_of_its_own(raw_connection, monkeypatch):
    # What the runner avoids: a Sync, and a wait for its result, before the first statement.
    sent = _sent(monkeypatch)
    with raw_connection.pipeline():
        raw_connection.execute("SELECT 1")
    assert sent[:2] == [b"BEGIN", b"Sync"]
    raw_connection.rollback()


def test_a_connection_marked_autocommit_leaves_the_begin_to_its_caller(raw_connection, monkeypatch):
    conn = raw_connection
    assert conn._autocommit is False and not conn.autocommit
    sent = _sent(monkeypatch)
    with conn.pipeline():
        conn._autocommit = True
        try:
            conn.execute(b"BEGIN", prepare=False)
            conn.execute("SELECT 1")
            conn.execute(b"COMMIT", prepare=False)
        finally:
            conn._autocommit = False
    assert sent == [b"BEGIN", b"SELECT 1", b"COMMIT", b"Sync"]  # one Sync: one round trip
    assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
    conn.execute("SELECT 1")  # psycopg's own BEGIN again once the flag is back
    assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    conn.rollback()
