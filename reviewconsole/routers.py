"""Reads that tolerate lag go to the read replica, when there is one; everything else does not.

Nothing reads from the replica by default: a claim, a decision or the item page must see its
own writes, and routing by model cannot tell those reads from a dashboard's. Code that may read
stale data says so explicitly::

    with replica_reads():
        figures = dashboard_figures()

Inside the block, ORM reads go to the ``replica`` alias (if DATABASE_REPLICA_URL configured
one) and raw SQL asks ``read_alias()`` which connection to use; writes always go to the primary.

The replica is asked how far behind it is as a block begins (one cheap statement, no table
read). Down, unreachable, or further behind than REVIEW_REPLICA_MAX_LAG_SECONDS, it is passed
over: the block's reads go to the primary, which is slower under load but never wrong.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections

REPLICA = "replica"
_reads_go_to: ContextVar[str] = ContextVar("reads_go_to", default="default")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplicaState:
    """What the router found when it asked the replica, and so where lag-tolerant reads go."""

    configured: bool
    reachable: bool = False
    lag_seconds: float | None = None
    max_lag_seconds: float = 0.0
    error: str = ""

    @property
    def usable(self) -> bool:
        return (
            self.configured
            and self.reachable
            and self.lag_seconds is not None
            and self.lag_seconds <= self.max_lag_seconds
        )

    @property
    def reads_from(self) -> str:
        return REPLICA if self.usable else "default"


def replica_state(max_lag_seconds: float | None = None) -> ReplicaState:
    """Ask the replica how far behind it is; a replica that does not answer is unreachable.

    It is usable if no further behind than max_lag_seconds (REVIEW_REPLICA_MAX_LAG_SECONDS
    unless given)."""
    if REPLICA not in settings.DATABASES:
        return ReplicaState(configured=False)
    from queue_app.db.runner import fetch_dicts
    from queue_app.db.statements import replication as replication_sql

    bound = settings.REVIEW_REPLICA_MAX_LAG_SECONDS if max_lag_seconds is None else max_lag_seconds
    try:
        [row] = fetch_dicts(replication_sql.REPLICA_LAG, {}, using=REPLICA)
    except DatabaseError as exc:
        # The next block tries again on a fresh connection: the replica may be back by then.
        with suppress(DatabaseError):
            connections[REPLICA].close()
        error = " ".join(str(exc).split())[:300]
        logger.warning("replica unreachable; reading from the primary", extra={"error": error})
        return ReplicaState(configured=True, max_lag_seconds=bound, error=error)
    state = ReplicaState(
        configured=True, reachable=True, lag_seconds=row["lag_seconds"], max_lag_seconds=bound
    )
    if not state.usable:
        logger.warning(
            "replica too far behind; reading from the primary",
            extra={"lag_seconds": state.lag_seconds, "max_lag_seconds": bound},
        )
    return state


@contextmanager
def replica_reads(max_lag_seconds: float | None = None) -> Iterator[None]:
    """Within the block, let reads that tolerate replication lag go to the replica (if it is up
    and no further behind than max_lag_seconds, by default REVIEW_REPLICA_MAX_LAG_SECONDS; else
    to the primary)."""
    with reads_on(replica_alias(max_lag_seconds)):
        yield


@contextmanager
def reads_on(alias: str) -> Iterator[None]:
    """Within the block, send reads to alias ("default" or the replica's, as replica_alias()
    chose it: the caller has already decided the reads tolerate that replica's lag)."""
    if alias not in ("default", REPLICA):
        raise ValueError(f"reads go to the primary or the replica, not {alias!r}")
    token = _reads_go_to.set(alias)
    try:
        yield
    finally:
        _reads_go_to.reset(token)


def replica_alias(max_lag_seconds: float | None = None) -> str:
    """Return the replica's alias if one is configured and fit to read from (no further behind
    than max_lag_seconds, by default REVIEW_REPLICA_MAX_LAG_SECONDS), else the primary's."""
    if REPLICA not in settings.DATABASES:
        return "default"
    return replica_state(max_lag_seconds).reads_from


def read_alias() -> str:
    """Return the database alias a read should use here: the replica inside replica_reads()."""
    return _reads_go_to.get()


class ReplicaRouter:
    """Route ORM reads inside replica_reads() to the replica; writes and migrations to default."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        return read_alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return "default"

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        # The replica holds the same rows as the primary.
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == "default"
