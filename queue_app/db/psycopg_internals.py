"""The two places the statement runner reaches into psycopg beyond its public API.

Each stays because the benchmark it serves measured a gain of more than 5 % with it than
without it in the same run (docs/performance.md): the parse cache's length limit (client CPU
of every claim, B3) and the private autocommit flag (a round trip less per transaction, B3).
tests/db/test_psycopg_internals.py fails if a psycopg upgrade changes what either relies on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

# psycopg keeps the parse of a statement's %(name)s placeholders in an LRU cache, but only for
# texts up to 4 KiB (psycopg._queries.MAX_CACHED_STATEMENT_LENGTH), to keep one-off SQL that
# ORMs generate out of the cache. CLAIM_NEXT_ITEM is about 8 KiB and runs on every Next item:
# above the limit psycopg re-parsed it with a regular expression every time, a tenth of the
# claim + decide cycle's client CPU (B3, docs/performance.md). The limit is raised to cover
# the named statements of queue_app.db.statements, which are few and fixed;
# tests/test_statement_cache.py fails if a statement outgrows it or psycopg drops the setting.
STATEMENT_CACHE_LIMIT = 16 * 1024


def raise_statement_cache_limit() -> None:
    """Let psycopg's parse cache hold the named statements (run once, at import)."""
    from psycopg import _queries

    if (
        getattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", STATEMENT_CACHE_LIMIT)
        < STATEMENT_CACHE_LIMIT
    ):
        _queries.MAX_CACHED_STATEMENT_LENGTH = STATEMENT_CACHE_LIMIT


@contextmanager
def transaction_as_written(conn: psycopg.Connection[Any]) -> Iterator[bool]:
    """Inside a pipeline: psycopg adds no BEGIN of its own; say whether the caller must.

    Outside autocommit psycopg starts the transaction itself before a pipeline's first
    statement: a BEGIN, then a Sync and a wait for its result, one round trip more than the
    statements need. Here psycopg is told it is in autocommit while the pipeline runs (its
    private _autocommit, which the public setter refuses to change mid-transaction), so the
    caller sends BEGIN in the same round trip as the statements. Yields whether a BEGIN is
    needed: the transaction is psycopg's to open and not yet open. A connection with its own
    isolation level, read-only or deferrable setting keeps psycopg's BEGIN, which carries them
    (Django sets them from OPTIONS; ours sets none).
    """
    own_begin = (conn.isolation_level, conn.read_only, conn.deferrable) != (None, None, None)
    if own_begin or not hasattr(conn, "_autocommit"):  # or a later psycopg: its BEGIN, as before
        yield False
        return
    saved = conn._autocommit
    begin = not saved and conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
    conn._autocommit = True
    try:
        yield begin
    finally:
        conn._autocommit = saved
