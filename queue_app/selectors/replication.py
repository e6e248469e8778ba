"""Streaming replication as /ops/ shows it: where its figures were read, and how far behind.

The replica's own view (its replay lag, which the router judges against
REVIEW_REPLICA_MAX_LAG_SECONDS) and the primary's (pg_stat_replication: each standby it sends
to, its replay lag and the bytes it has still to replay). Either side may be missing: no replica
configured, a replica that is down, a primary whose standbys connect elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError

from queue_app.db.runner import fetch_dicts
from queue_app.db.statements import replication as replication_sql
from reviewconsole.routers import ReplicaState, replica_state


@dataclass(frozen=True)
class ReplicationStatus:
    replica: ReplicaState
    standbys: list[dict[str, Any]] = field(default_factory=list)

    @property
    def shown(self) -> bool:
        """Whether /ops/ has anything to say: a replica configured, or standbys connected."""
        return self.replica.configured or bool(self.standbys)


def replication_status() -> ReplicationStatus:
    """Ask the replica (through the router) and the primary how replication stands."""
    try:
        standbys = fetch_dicts(replication_sql.STANDBYS, {})
    except DatabaseError:  # a role that may not read it: the replica's side still shows
        standbys = []
    return ReplicationStatus(replica=replica_state(), standbys=standbys)
