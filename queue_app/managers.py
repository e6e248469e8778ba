"""Thin managers: run the named statements in queue_app.sql and hand back model instances.

No policy here (who may claim, what a stale token means): that is the services package.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cache, lru_cache, partial
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

import psycopg
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, models, transaction
from django.db.models.base import DEFERRED
from pghistory.runtime import _inject_history_context  # off the pipeline, see below

from queue_app import sql

if TYPE_CHECKING:
    from queue_app.models import Decision, ReviewItem

M = TypeVar("M", bound=models.Model)

logger = logging.getLogger("queue_app")

# psycopg keeps the parse of a statement's %(name)s placeholders in an LRU cache, but only for
# texts up to 4 KiB (psycopg._queries.MAX_CACHED_STATEMENT_LENGTH), to keep one-off SQL that
# ORMs generate out of the cache. CLAIM_NEXT_ITEM is about 8 KiB and runs on every Next item:
# above the limit psycopg re-parsed it with a regular expression every time, a tenth of the
# claim + decide cycle's client CPU (bench/NOTES.md, 2026-12-01). The limit is raised to cover
# the named statements of queue_app.sql and sql_lanes, which are few and fixed;
# tests/test_statement_cache.py fails if a statement outgrows it or psycopg drops the setting.
STATEMENT_CACHE_LIMIT = 16 * 1024


def _cache_named_statements() -> None:
    from psycopg import _queries

    if (
        getattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", STATEMENT_CACHE_LIMIT)
        < STATEMENT_CACHE_LIMIT
    ):
        _queries.MAX_CACHED_STATEMENT_LENGTH = STATEMENT_CACHE_LIMIT


_cache_named_statements()


def set_local_timeouts(*, lock_timeout_ms: int, statement_timeout_ms: int) -> None:
    """Bound lock waits and statement time for the rest of the current transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            sql.SET_LOCAL_TIMEOUTS,
            {
                "lock_timeout": f"{lock_timeout_ms}ms",
                "statement_timeout": f"{statement_timeout_ms}ms",
            },
        )


def wake_apply_workers() -> None:
    """NOTIFY the apply workers that effect jobs are waiting (sql.WAKE_APPLY_WORKERS)."""
    with connection.cursor() as cursor:
        cursor.execute(sql.WAKE_APPLY_WORKERS)


def wake_apply_workers_after_commit() -> None:
    """Wake the apply workers once the current transaction has committed, in a transaction of
    its own (why: sql.WAKE_APPLY_WORKERS); at once outside a transaction.

    robust: the decision is recorded by then, so a failed wake-up is logged, never raised to
    the reviewer; the workers' poll finds the jobs within its interval.
    """
    transaction.on_commit(wake_apply_workers, robust=True)


def fetch_dicts(
    statement: str, params: dict[str, Any], *, using: str = "default"
) -> list[dict[str, Any]]:
    """Run a statement and return its rows as dicts keyed by column name."""
    with connections[using].cursor() as cursor:
        cursor.execute(statement, params)
        if cursor.description is None:
            return []
        names = [col.name for col in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@lru_cache(maxsize=64)
def _row_plan(
    model: type[models.Model], columns: tuple[str, ...]
) -> tuple[list[int | None], list[tuple[int, list[Callable[..., Any]], Any]], list[int]]:
    """How to turn rows with these columns into model instances (worked out once per shape).

    Returns, per concrete field in model order, the column holding it (None: deferred); the
    field converters to apply (the exact-JSON decoder of the payload, for one); and the
    columns that are not fields (set as plain attributes, as raw() does with annotations).
    """
    by_column = {name: i for i, name in enumerate(columns)}
    fields = model._meta.concrete_fields
    order = [by_column.get(f.column) for f in fields]
    converters = []
    for f in fields:
        i = by_column.get(f.column)
        if i is None:
            continue
        col = f.get_col(model._meta.db_table)
        found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
        if found:
            converters.append((i, found, col))
    known = {f.column for f in fields}
    extra = [i for i, name in enumerate(columns) if name not in known]
    return order, converters, extra


Result = tuple[tuple[str, ...], list[tuple[Any, ...]]]


@contextmanager
def _without_history_context(db: Any) -> Iterator[None]:
    """Leave these statements as written while an access-history context is active.

    Inside pghistory.context (admin requests, queue_app/identity/middleware.py) every write
    is prefixed with a SELECT that hands the trigger its context; a statement bound on the
    server cannot hold two commands, and nothing run here changes access anyway.
    """
    held = [w for w in db.execute_wrappers if w is _inject_history_context]
    for wrapper in held:
        db.execute_wrappers.remove(wrapper)
    try:
        yield
    finally:
        db.execute_wrappers.extend(held)


def _send_nothing() -> Iterator[None]:
    return
    yield  # a generator, as the method it stands in for


@contextmanager
def send_at_sync(pipeline: Any) -> Iterator[None]:
    """Queue the statements executed inside in the pipeline, and send them all at its next sync.

    psycopg writes each statement of a pipeline to the socket as it is executed, polling the
    socket before and after: a write (and, at the server, a read and a wake-up) per statement.
    libpq itself, and pgbench's pipelines, queue the statements and write them at the sync.
    Here the statements, their BEGIN, COMMIT and Sync go out in one write. What that buys is
    small: for B3's psycopg floor in one process, 0.94x the cycles per second of writing
    statement by statement, at the same client and server CPU per cycle (bench/pipeline_sends.py,
    2026-12-04 20:59; its earlier 1.13x was mostly a BEGIN round trip, _transaction_as_written).
    With the cores saturated, 8 processes at once, 0.99x (--processes 8). Nothing measurable
    either way, then; it stays until removing it (one private psycopg method fewer) comes with
    another way for tests/test_round_trips.py to see one write per round trip. Nothing else
    changes: the server receives the same messages in the same order, runs them one after
    another, and stops at the first error.

    The write happens in the pipeline's _communicate_gen, a private method of psycopg's that
    every statement calls; while it is replaced, psycopg only queues. If a later psycopg drops
    it, statements are written one by one again (tests/test_round_trips.py fails to say so).
    """
    if not hasattr(type(pipeline), "_communicate_gen"):
        yield
        return
    pipeline._communicate_gen = _send_nothing
    try:
        yield
    finally:
        del pipeline._communicate_gen


@contextmanager
def _transaction_as_written(conn: psycopg.Connection[Any]) -> Iterator[bool]:
    """Inside a pipeline: psycopg adds no BEGIN of its own; say whether the caller must.

    Outside autocommit psycopg starts the transaction itself, before the first statement run
    while the server is idle in none: it queues a BEGIN and a Sync. Queued, nothing has reached
    the server, so it is still idle at the next statement, and the next: a BEGIN and a Sync
    before every statement of a pipeline written at its sync (the server warns "there is
    already a transaction in progress" for each, in its log), and COMMIT, which psycopg sends
    only in a transaction, left for a round trip of its own. Here psycopg is told it is in
    autocommit while the statements are queued (its private _autocommit, which the public
    setter refuses to change mid-transaction), so the caller writes BEGIN and COMMIT itself,
    once each. Yields whether a BEGIN is needed: the transaction is psycopg's to open and not
    yet open. A connection with its own isolation level, read-only or deferrable setting keeps
    psycopg's BEGIN, which carries them (Django sets them from OPTIONS; ours sets none).
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


def run_together(
    steps: Sequence[tuple[str, dict[str, Any]]],
    *,
    commit: bool = False,
    after_commit: Sequence[tuple[str, dict[str, Any]]] = (),
) -> list[Result]:
    """Send statements in one round trip and return each one's (column names, rows), in order.

    psycopg's pipeline mode: the statements run one after another in the caller's transaction,
    exactly as if sent one by one, but the client waits for the server once instead of once
    per statement. If one fails, the ones after it do not run and the error is raised (as
    Django's database error) when the results are collected. Only for statements where no
    decision in Python is needed between them. The transaction's BEGIN, when this opens it,
    goes in the same write (_transaction_as_written).

    commit=True, for the last statements of a transaction: when the caller's atomic block is
    the outermost one, the COMMIT goes in the same round trip, so locks taken by the
    statements are not held while the client is scheduled back to send it; the atomic block
    then finds nothing left to commit. Inside a savepoint nothing is committed here and the
    block ends as usual. Either way a failure raises before the block exits, which then rolls
    back.

    after_commit: statements to run once the transaction has committed, together in a
    transaction of their own (the apply workers' wake-up, sql.WAKE_APPLY_WORKERS); the first
    that fails skips the rest. When the COMMIT is sent here they follow it in the same round
    trip, outside the committed transaction (after an explicit COMMIT, what comes before the
    Sync runs in an implicit transaction); otherwise they run when the atomic block commits.
    Robust either way: the transaction has committed by then, so a failure is logged, never
    raised, unless the connection itself was lost. They are never prepared: a statement
    psycopg prepares in the round trip of a COMMIT that fails would be skipped by the server
    but counted as prepared by psycopg, and fail on that connection from then on.

    The cursors bind parameters on the server. Django's own inline them into the text and
    never prepare, so the server parses and plans every statement afresh; on the claim and
    decide paths that was about half the server's CPU. With these, psycopg prepares a
    statement once the connection has run it prepare_threshold times
    (settings.REVIEW_PREPARED_STATEMENTS) and the server reuses its plan: a generic one once
    that is no worse than planning each time (test_claim_plan checks the claim's).
    """
    db = connections[DEFAULT_DB_ALIAS]
    committing = commit and db.in_atomic_block and not db.savepoint_ids
    # What Django does before opening a cursor: the per-request health check, then connect.
    db.close_if_health_check_failed()
    db.ensure_connection()
    conn = db.connection
    # Wrapped as Django wraps its own cursors (query log, execute wrappers); one per statement
    # to hold its result. BEGIN and COMMIT go on psycopg cursors of their own: Django's query
    # log already records its BEGIN and COMMIT.
    wrap = db.make_debug_cursor if db.queries_logged else db.make_cursor
    cursors = [wrap(psycopg.Cursor(conn)) for _ in steps]
    control, ending = psycopg.Cursor(conn), psycopg.Cursor(conn)
    after = [wrap(psycopg.ClientCursor(conn)) for _ in after_commit] if committing else []
    try:
        with db.wrap_database_errors, _without_history_context(db):
            try:
                # Exited in reverse order: psycopg's own BEGIN rule and its socket writes are
                # back in place before the pipeline's exit sends the Sync and reads the results.
                with (
                    conn.pipeline() as pipeline,
                    send_at_sync(pipeline),
                    _transaction_as_written(conn) as begin,
                ):
                    if begin:
                        control.execute(b"BEGIN", prepare=False)
                    for cursor, (statement, params) in zip(cursors, steps, strict=True):
                        cursor.execute(statement, params)
                    if committing:
                        ending.execute(b"COMMIT", prepare=False)
                        for cursor, (statement, params) in zip(after, after_commit, strict=True):
                            cursor.execute(statement, params)
            except psycopg.Error as exc:
                # The COMMIT went through and only what followed it failed: keep the results.
                # A lost connection is raised all the same: nothing more can be sent on it.
                if not (after_commit and _succeeded(ending)) or conn.broken:
                    raise _statement_error(exc) from None
                db.errors_occurred = True  # as wrap_database_errors would have noted
                logger.exception("statement after commit failed (the transaction committed)")
            if after_commit and not committing:
                transaction.on_commit(partial(_run_after_commit, after_commit), robust=True)
            results = []
            for cursor, (statement, _) in zip(cursors, steps, strict=True):
                res = cursor.pgresult
                if not res.nfields:
                    results.append(((), []))
                    continue
                results.append((_column_names(statement, res), cursor.fetchall()))
            return results
    finally:
        for cursor in (*cursors, control, ending, *after):
            cursor.close()


# A statement's column names, by its text and its number of columns. Read straight from the
# result: building cursor.description's column objects cost more client CPU than the rest of a
# round trip. And remembered: the same statement returns the same columns every time, and
# decoding them again was about 250 calls a reviewer cycle (bench/NOTES.md, B8). The statements
# are queue_app.sql's constants; the bound only guards against a caller that builds its text.
_COLUMN_NAMES: dict[tuple[str, int], tuple[str, ...]] = {}
_COLUMN_NAMES_KEPT = 1024


def _column_names(statement: str, res: psycopg.pq.abc.PGresult) -> tuple[str, ...]:
    key = (statement, res.nfields)
    names = _COLUMN_NAMES.get(key)
    if names is None:
        names = tuple(res.fname(i).decode() for i in range(res.nfields))
        if len(_COLUMN_NAMES) < _COLUMN_NAMES_KEPT:
            _COLUMN_NAMES[key] = names
    return names


def _statement_error(exc: psycopg.Error) -> psycopg.Error:
    """The error of the statement that failed, not the abort of those after it.

    psycopg reads results while it is still sending a pipeline's statements, and reads the rest
    once all are sent. When the failing statement's result comes back in the first loop, the
    statements after it are reported aborted in the second, from a finally block: psycopg then
    raises "pipeline aborted" in place of the statement's own error, which Python keeps as the
    abort's context. Which loop reads it is a matter of timing (many statements after the
    failing one make the first all but certain: tests/test_round_trips.py), and callers tell
    failures apart by the statement's error (an unknown reason code is a not-null violation).
    """
    while isinstance(exc, psycopg.errors.PipelineAborted) and isinstance(
        exc.__context__, psycopg.Error
    ):
        exc = exc.__context__
    return exc


def _succeeded(cursor: psycopg.Cursor[Any]) -> bool:
    res = cursor.pgresult
    return res is not None and res.status == psycopg.pq.ExecStatus.COMMAND_OK


def _run_after_commit(statements: Sequence[tuple[str, dict[str, Any]]]) -> None:
    with connection.cursor() as cursor:
        for statement, params in statements:
            cursor.execute(statement, params)


def fetch_prepared(statement: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one statement with server-side binding and return its rows as dicts.

    fetch_dicts for a statement a worker runs over and over: bound on the server, so psycopg
    prepares it after prepare_threshold runs and the server stops planning it anew (see
    run_together). The apply worker's effect claim takes a few milliseconds to plan and a
    tenth of one to run (bench/profile_apply.py).
    """
    names, rows = prepared_result(statement, params)
    return [dict(zip(names, row, strict=True)) for row in rows]


def fetch_prepared_instances(model: type[M], statement: str, params: dict[str, Any]) -> list[M]:
    """fetch_prepared's one server-bound statement, its rows built into model instances: for
    reads every request makes (its session, its user), where compiling the ORM's query cost
    more client CPU than the read."""
    return build_instances(model, prepared_result(statement, params))


def prepared_result(statement: str, params: dict[str, Any]) -> Result:
    """One server-bound statement's (column names, rows), for a caller that builds more than
    one model from each row (split_result, build_instances)."""
    db = connections[DEFAULT_DB_ALIAS]
    db.close_if_health_check_failed()
    db.ensure_connection()
    wrap = db.make_debug_cursor if db.queries_logged else db.make_cursor
    # One statement, so no pipeline (run_together's sync messages would cost a round trip's
    # worth for nothing); Django's wrapper keeps its query log and execute wrappers.
    cursor = wrap(psycopg.Cursor(db.connection))
    try:
        with db.wrap_database_errors:
            cursor.execute(statement, params)
            res = cursor.cursor.pgresult
            if res is None or not res.nfields:
                return (), []
            return _column_names(statement, res), cursor.fetchall()
    finally:
        cursor.close()


def fetch_instances(model: type[M], statement: str, params: dict[str, Any]) -> list[M]:
    """Run a statement RETURNING a model's columns and build instances from the rows."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        result = tuple(col.name for col in cursor.description), cursor.fetchall()
    return build_instances(model, result)


def build_instances(model: type[M], result: Result) -> list[M]:
    """Model instances from a statement's (column names, rows).

    What raw() does, without its per-call work of mapping columns to fields again: on the
    claim and decide paths that mapping cost more client CPU than the statements themselves.
    """
    columns, rows = result
    if not rows:
        return []
    order, converters, extra = _row_plan(model, columns)
    instances = []
    for row in rows:
        values = list(row)
        for i, funcs, col in converters:
            for func in funcs:
                values[i] = func(values[i], col, connection)
        instance = model.from_db(
            connection.alias,
            None,
            [DEFERRED if i is None else values[i] for i in order],
        )
        for i in extra:
            setattr(instance, columns[i], values[i])
        instances.append(instance)
    return instances


_QUEUE_PREFIX = "queue__"


@cache
def _item_with_queue_statement(queue_model: type[models.Model]) -> str:
    """sql.ITEM_WITH_QUEUE_AND_ACCESS with the queue's columns, as the model has them."""
    columns = ", ".join(
        f'q."{field.column}" AS "{_QUEUE_PREFIX}{field.column}"'
        for field in queue_model._meta.concrete_fields
    )
    return sql.ITEM_WITH_QUEUE_AND_ACCESS.format(queue_columns=columns)


def split_result(result: Result, *, prefix: str) -> tuple[Result, Result]:
    """Split a statement's (column names, rows) into the columns without the prefix and those
    with it (the prefix removed): a row and the related row a join returned beside it."""
    columns, rows = result
    own = [i for i, name in enumerate(columns) if not name.startswith(prefix)]
    related = [i for i, name in enumerate(columns) if name.startswith(prefix)]

    def pick(indexes: list[int]) -> Result:
        names = tuple(columns[i].removeprefix(prefix) for i in indexes)
        return names, [tuple(row[i] for i in indexes) for row in rows]

    return pick(own), pick(related)


class ReviewItemManager(models.Manager["ReviewItem"]):
    def renew_or_claim_one(
        self,
        *,
        queue_id: int,
        owner_id: int,
        ttl: timedelta,
        max_leases: int,
        release_skip: timedelta,
        lock_timeout_ms: int,
        statement_timeout_ms: int,
        for_page: bool = False,
    ) -> tuple[bool, ReviewItem | None, ReviewItem | None]:
        """A reviewer's Next item in one round trip, committed; return (may review, renewed,
        claimed).

        Sets the timeouts and takes the reviewer's claim lock in this queue, renews their live
        lease there if they hold one, and otherwise claims the next item. Neither the renew
        nor the claim does anything for a reviewer who may not review the queue. for_page:
        the items come back with their id, trace id and lease count only, the rest deferred
        (sql.CLAIM_NEXT_ITEM_FOR_PAGE), for a caller that opens the item's page next.
        """
        params = {
            "queue_id": queue_id,
            "owner_id": owner_id,
            "lock_timeout": f"{lock_timeout_ms}ms",
            "statement_timeout": f"{statement_timeout_ms}ms",
            "ttl": ttl,
            "max_leases": max_leases,
            "release_skip": release_skip,
        }
        renew, claim = (
            (sql.RENEW_OWN_LIVE_LEASE_FOR_PAGE, sql.CLAIM_NEXT_ITEM_FOR_PAGE)
            if for_page
            else (sql.RENEW_OWN_LIVE_LEASE, sql.CLAIM_NEXT_ITEM)
        )
        guard, renewed, claimed = run_together(
            [
                (sql.SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE, params),
                (renew, params),
                (claim, params),
            ],
            commit=True,
        )
        allowed = bool(guard[1][0][-1])
        renewed_items = build_instances(self.model, renewed)
        claimed_items = build_instances(self.model, claimed)
        return (
            allowed,
            renewed_items[0] if renewed_items else None,
            claimed_items[0] if claimed_items else None,
        )

    def with_queue_and_access(self, *, item_id: int, user_id: int) -> ReviewItem | None:
        """The item with its queue attached and may_review set (whether the user may review
        that queue), in one prepared statement; None if there is no such item."""
        statement, params = self.with_queue_and_access_statement(item_id=item_id, user_id=user_id)
        return self.built_with_queue(prepared_result(statement, params))

    def with_queue_and_access_statement(
        self, *, item_id: int, user_id: int
    ) -> tuple[str, dict[str, Any]]:
        """with_queue_and_access's statement, for a caller that sends it with others."""
        queue_model = self.model._meta.get_field("queue").related_model
        return _item_with_queue_statement(queue_model), {"item_id": item_id, "owner_id": user_id}

    def built_with_queue(self, result: Result) -> ReviewItem | None:
        """The item with_queue_and_access's statement returned, its queue attached, or None."""
        queue_model = self.model._meta.get_field("queue").related_model
        item_columns, queue_columns = split_result(result, prefix=_QUEUE_PREFIX)
        items = build_instances(self.model, item_columns)
        if not items:
            return None
        item = items[0]
        item.queue = build_instances(queue_model, queue_columns)[0]
        return item

    def may_review(self, *, queue_id: int, user_id: int) -> bool:
        rows = fetch_dicts(
            sql.MAY_REVIEW_QUEUE,
            {"queue_id": queue_id, "owner_id": user_id},
        )
        return bool(rows[0]["allowed"])

    def may_send_evidence(self, *, queue_id: int, user_id: int) -> bool:
        rows = fetch_dicts(sql.MAY_SEND_EVIDENCE, {"queue_id": queue_id, "owner_id": user_id})
        return bool(rows[0]["allowed"])

    def claim(
        self,
        *,
        queue_id: int,
        owner_id: int,
        limit: int,
        ttl: timedelta,
        max_leases: int,
        release_skip: timedelta,
    ) -> list[ReviewItem]:
        return fetch_instances(
            self.model,
            sql.CLAIM_ITEMS,
            {
                "queue_id": queue_id,
                "owner_id": owner_id,
                "limit": limit,
                "ttl": ttl,
                "max_leases": max_leases,
                "release_skip": release_skip,
            },
        )

    def renew(
        self, *, item_id: int, queue_id: int, lease_token: UUID, owner_id: int, ttl: timedelta
    ) -> datetime | None:
        rows = fetch_dicts(
            sql.RENEW_LEASE,
            {
                "item_id": item_id,
                "queue_id": queue_id,
                "lease_token": lease_token,
                "owner_id": owner_id,
                "ttl": ttl,
            },
        )
        return rows[0]["lease_expires"] if rows else None

    def release(self, *, item_id: int, queue_id: int, lease_token: UUID, owner_id: int) -> bool:
        rows = fetch_dicts(
            sql.RELEASE_LEASE,
            {
                "item_id": item_id,
                "queue_id": queue_id,
                "lease_token": lease_token,
                "owner_id": owner_id,
            },
        )
        return bool(rows)

    def escalate_abandoned(self, *, limit: int) -> list[dict[str, Any]]:
        return fetch_dicts(sql.ESCALATE_ABANDONED, {"limit": limit})

    # -- holds and the subject's history (issue 15) --

    def hold(
        self,
        *,
        item_id: int,
        lease_token: UUID,
        owner_id: int,
        reason_code: str,
        hold_until: datetime,
    ) -> dict[str, Any] | None:
        rows = fetch_dicts(
            sql.HOLD_ITEM,
            {
                "item_id": item_id,
                "lease_token": lease_token,
                "owner_id": owner_id,
                "reason_code": reason_code,
                "hold_until": hold_until,
            },
        )
        return rows[0] if rows else None

    def resume_held(
        self, *, item_id: int, actor_id: int | None, cause: str
    ) -> dict[str, Any] | None:
        rows = fetch_dicts(
            sql.RESUME_HELD_ITEM, {"item_id": item_id, "actor_id": actor_id, "cause": cause}
        )
        return rows[0] if rows else None

    def subject_history(
        self, *, subject_key: str, exclude_id: int, user_id: int, limit: int
    ) -> list[dict[str, Any]]:
        return fetch_dicts(
            sql.SUBJECT_HISTORY,
            {
                "subject_key": subject_key,
                "exclude_id": exclude_id,
                "owner_id": user_id,
                "limit": limit,
            },
        )


class DecisionManager(models.Manager["Decision"]):
    def insert(
        self,
        *,
        item_id: int,
        queue_id: int,
        reviewer_id: int,
        verdict: str,
        reason_code: str,
        evidence_hash: str,
        note: str,
        lease_token: UUID | None = None,
        supersedes_id: int | None = None,
        corrected_verdict: str | None = None,
        needs_check: bool = False,
        qa_sampled: bool = False,
        commit: bool = False,
    ) -> Decision:
        """Insert a decision (commit: and end the transaction, see run_together).

        A reason that is not an active code of this queue and verdict fails the statement
        (see sql.INSERT_DECISION and is_missing_reason).
        """
        [inserted] = run_together(
            [
                (
                    sql.INSERT_DECISION,
                    {
                        "item_id": item_id,
                        "queue_id": queue_id,
                        "reviewer_id": reviewer_id,
                        "verdict": verdict,
                        "reason_code": reason_code,
                        "evidence_hash": evidence_hash,
                        "note": note,
                        "lease_token": lease_token,
                        "supersedes_id": supersedes_id,
                        "corrected_verdict": corrected_verdict,
                        "needs_check": needs_check,
                        "qa_sampled": qa_sampled,
                    },
                )
            ],
            commit=commit,
            # INSERT_DECISION queued an effect job unless the decision waits for its check.
            after_commit=() if needs_check else [(sql.WAKE_APPLY_WORKERS, {})],
        )
        return self._built(inserted)

    def close_and_record(
        self,
        *,
        item_id: int,
        queue_id: int,
        lease_token: UUID,
        reviewer_id: int,
        verdict: str,
        reason_code: str,
        evidence_hash: str,
        note: str,
        qa_draw: int | None,
        warnings_seen: bool,
        time_zone: str,
        lock_timeout_ms: int,
        statement_timeout_ms: int,
    ) -> Decision | None:
        """The whole decide in one round trip with its COMMIT (sql.CLOSE_AND_RECORD_DECISION);
        None when one of the statement's conditions did not hold, and nothing was written.

        The wake-up of the apply workers follows the COMMIT whether an effect job was queued
        or not: which it was is known only from the result, and a wake-up that finds nothing
        costs a worker one empty claim.
        """
        params = {
            "item_id": item_id,
            "queue_id": queue_id,
            "lease_token": lease_token,
            "owner_id": reviewer_id,
            "reviewer_id": reviewer_id,
            "verdict": verdict,
            "reason_code": reason_code,
            "evidence_hash": evidence_hash,
            "note": note,
            "supersedes_id": None,
            "corrected_verdict": None,
            # As numeric whatever its size (an int over 2**63 would be, one under it bigint):
            # one parameter type, so one prepared statement.
            "qa_draw": None if qa_draw is None else Decimal(qa_draw),
            "warnings_seen": warnings_seen,
            "time_zone": time_zone,
            "lock_timeout": f"{lock_timeout_ms}ms",
            "statement_timeout": f"{statement_timeout_ms}ms",
        }
        _, recorded = run_together(
            [(sql.SET_LOCAL_TIMEOUTS, params), (sql.CLOSE_AND_RECORD_DECISION, params)],
            commit=True,
            after_commit=[(sql.WAKE_APPLY_WORKERS, {})],
        )
        if not recorded[1]:
            return None
        return self._built(recorded)

    def refusal_facts(
        self,
        *,
        item_id: int,
        queue_id: int,
        lease_token: UUID,
        reviewer_id: int,
        verdict: str,
        evidence_hash: str,
        time_zone: str,
    ) -> dict[str, bool] | None:
        """Which of close_and_record's conditions hold now (sql.EXPLAIN_REFUSED_DECISION);
        None when there is no such item. Reads only."""
        rows = fetch_dicts(
            sql.EXPLAIN_REFUSED_DECISION,
            {
                "item_id": item_id,
                "queue_id": queue_id,
                "lease_token": lease_token,
                "owner_id": reviewer_id,
                "verdict": verdict,
                "evidence_hash": evidence_hash,
                "time_zone": time_zone,
            },
        )
        return rows[0] if rows else None

    def _built(self, result: Result) -> Decision:
        from queue_app.models import Queue, ReasonCode

        decision_columns, reason_columns = split_result(result, prefix="reason__")
        decision_columns, queue_columns = split_result(decision_columns, prefix=_QUEUE_PREFIX)
        decision = build_instances(self.model, decision_columns)[0]
        decision.reason_code = build_instances(ReasonCode, reason_columns)[0]
        if queue_columns[0]:
            # The one-statement decide returns what a Next claim needs of the queue (the rest
            # of its fields deferred): the decision's queue, in its cache.
            decision.queue = build_instances(Queue, queue_columns)[0]
        return decision


def is_missing_reason(exc: IntegrityError) -> bool:
    """Whether INSERT_DECISION failed for want of an active reason code (see there)."""
    cause = exc.__cause__
    return (
        isinstance(cause, psycopg.errors.NotNullViolation)
        and cause.diag.column_name == "reason_code_id"
    )
