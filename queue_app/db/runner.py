"""Send named statements to PostgreSQL and read what comes back.

fetch_* run one statement and return dicts or model instances; run_together sends several in
one round trip (a pipeline), with the COMMIT when it ends the transaction; build_instances and
split_result turn a statement's (column names, rows) into model instances. The two places it reaches
into psycopg's internals are in psycopg_internals, and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache, partial
from typing import Any, TypeVar

import psycopg
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, models, transaction
from django.db.models.base import DEFERRED
from pghistory.runtime import _inject_history_context  # off the pipeline, see below

from queue_app.db.psycopg_internals import raise_statement_cache_limit, transaction_as_written
from queue_app.db.statements import access as access_sql
from queue_app.db.statements import outbox as outbox_sql

M = TypeVar("M", bound=models.Model)

logger = logging.getLogger("queue_app")

# Every named statement fits psycopg's parse cache (see psycopg_internals).
raise_statement_cache_limit()


def set_local_timeouts(*, lock_timeout_ms: int, statement_timeout_ms: int) -> None:
    """Bound lock waits and statement time for the rest of the current transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            access_sql.SET_LOCAL_TIMEOUTS,
            {
                "lock_timeout": f"{lock_timeout_ms}ms",
                "statement_timeout": f"{statement_timeout_ms}ms",
            },
        )


def wake_apply_workers() -> None:
    """NOTIFY the apply workers that effect jobs are waiting (outbox_sql.WAKE_APPLY_WORKERS)."""
    with connection.cursor() as cursor:
        cursor.execute(outbox_sql.WAKE_APPLY_WORKERS)


def wake_apply_workers_after_commit() -> None:
    """Wake the apply workers once the current transaction has committed, in a transaction of
    its own (why: outbox_sql.WAKE_APPLY_WORKERS); at once outside a transaction.

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
    goes in the same round trip (psycopg_internals.transaction_as_written).

    commit=True, for the last statements of a transaction: when the caller's atomic block is
    the outermost one, the COMMIT goes in the same round trip, so locks taken by the
    statements are not held while the client is scheduled back to send it; the atomic block
    then finds nothing left to commit. Inside a savepoint nothing is committed here and the
    block ends as usual. Either way a failure raises before the block exits, which then rolls
    back.

    after_commit: statements to run once the transaction has committed, together in a
    transaction of their own (the apply workers' wake-up, outbox_sql.WAKE_APPLY_WORKERS); the first
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
    # django-stubs type make_cursor's argument as Django's own wrapper; it takes any DB-API
    # cursor, as Django's backends pass it theirs.
    cursors = [wrap(psycopg.Cursor(conn)) for _ in steps]  # type: ignore[arg-type]
    control, ending = psycopg.Cursor(conn), psycopg.Cursor(conn)
    after = (
        [
            wrap(psycopg.ClientCursor(conn))  # type: ignore[arg-type]  # as above
            for _ in after_commit
        ]
        if committing
        else []
    )
    try:
        with db.wrap_database_errors, _without_history_context(db):
            try:
                # Exited in reverse order: psycopg's own BEGIN rule is back in place before the
                # pipeline's exit sends the Sync and reads the results.
                with conn.pipeline(), transaction_as_written(conn) as begin:
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
            results: list[Result] = []
            for cursor in cursors:
                res = cursor.pgresult
                if not res.nfields:
                    results.append(((), []))
                    continue
                results.append((_column_names(res), cursor.fetchall()))
            return results
    finally:
        for wrapped in (*cursors, *after):
            wrapped.close()
        control.close()
        ending.close()


def _column_names(res: psycopg.pq.abc.PGresult) -> tuple[str, ...]:
    # Read straight from the result: building cursor.description's column objects costs more
    # client CPU than the rest of a round trip.
    return tuple((res.fname(i) or b"").decode() for i in range(res.nfields))


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
    cursor = wrap(psycopg.Cursor(db.connection))  # type: ignore[arg-type]  # see run_together
    try:
        with db.wrap_database_errors:
            cursor.execute(statement, params)
            res = cursor.cursor.pgresult
            if res is None or not res.nfields:
                return (), []
            return _column_names(res), cursor.fetchall()
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
            # Read only when fewer values than concrete fields come: the plan gives every one.
            None,  # type: ignore[arg-type]
            [DEFERRED if i is None else values[i] for i in order],
        )
        for i in extra:
            setattr(instance, columns[i], values[i])
        instances.append(instance)
    return instances


def prefixed_columns(model: type[models.Model], *, alias: str, prefix: str) -> str:
    """The model's columns from the table aliased alias, each named prefix + column: the
    select list split_result takes apart again."""
    return ", ".join(
        f'{alias}."{field.column}" AS "{prefix}{field.column}"'
        for field in model._meta.concrete_fields
    )


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


def is_missing_reason(exc: IntegrityError) -> bool:
    """Whether INSERT_DECISION failed for want of an active reason code (see there)."""
    cause = exc.__cause__
    return (
        isinstance(cause, psycopg.errors.NotNullViolation)
        and cause.diag.column_name == "reason_code_id"
    )
