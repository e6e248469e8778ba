"""Reads that tolerate lag go to the read replica, when there is one; everything else does not.

Nothing reads from the replica by default: a claim, a decision or the item page must see its
own writes, and routing by model cannot tell those reads from a dashboard's. Code that may read
stale data says so explicitly::

    with replica_reads():
        figures = dashboard_figures()

Inside the block, ORM reads go to the ``replica`` alias (if DATABASE_REPLICA_URL configured
one) and raw SQL asks ``read_alias()`` which connection to use; writes always go to the primary.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings

REPLICA = "replica"
_reading_from_replica: ContextVar[bool] = ContextVar("reading_from_replica", default=False)


@contextmanager
def replica_reads() -> Iterator[None]:
    """Within the block, let reads that tolerate replication lag go to the replica."""
    token = _reading_from_replica.set(True)
    try:
        yield
    finally:
        _reading_from_replica.reset(token)


def replica_alias() -> str:
    """Return the replica's alias if one is configured, else the primary's."""
    return REPLICA if REPLICA in settings.DATABASES else "default"


def read_alias() -> str:
    """Return the database alias a read should use here: the replica inside replica_reads()."""
    return replica_alias() if _reading_from_replica.get() else "default"


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
