"""Django's PostgreSQL backend, with a per-request health check that costs no round trip under load.

With CONN_HEALTH_CHECKS, Django sends `SELECT 1` before the first query of every request that
reuses a connection: a round trip the server must answer, on every page (two per reviewer
cycle, bench B8). Here that question is asked only of a connection that has sat unused for
longer than settings.DB_HEALTH_CHECK_AFTER_SECONDS (PgBouncer's server_check_delay is the same
idea). A connection used more recently is judged by its socket, without a round trip: a server
that ends a connection (a restart, a failover's fast shutdown, pg_terminate_backend, the
idle-in-transaction timeout) sends its reason before it hangs up, so the socket of a connection
it ended has something to read, where a live idle one has nothing. Anything to read, and the
full `SELECT 1` is asked after all.

What this lets through: a connection the server ended in the instant between its last use and
this request, before its goodbye arrived, and less than the quiet period ago. That request
fails as one whose connection dies mid-request does (a 503 asking to try again, nothing
written: queue_app/error_middleware.py) and Django replaces the connection at its end.
"""

from __future__ import annotations

import select
import time

from django.conf import settings
from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    # When a request last ran a query on this connection (time.monotonic()); 0: never.
    last_used = 0.0

    def close_if_unusable_or_obsolete(self) -> None:
        # Called at the start and at the end of every request. Only at the end of a request
        # that used the connection is its health check done (Django resets the flag here).
        if self.connection is not None and self.health_check_done:
            self.last_used = time.monotonic()
        super().close_if_unusable_or_obsolete()

    def close_if_health_check_failed(self) -> None:
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        quiet = time.monotonic() - self.last_used > settings.DB_HEALTH_CHECK_AFTER_SECONDS
        # A round trip only when there is a reason to ask (is_usable: Django's SELECT 1).
        if (quiet or self.server_spoke()) and not self.is_usable():
            self.close()
        self.health_check_done = True

    def server_spoke(self) -> bool:
        """Whether the server sent anything while the connection sat idle between requests (or
        the connection is known to be broken already: is_usable then confirms it)."""
        if self.connection.closed or self.connection.pgconn.status != pq.ConnStatus.OK:
            return True
        poll = select.poll()
        poll.register(self.connection.pgconn.socket, select.POLLIN)
        return bool(poll.poll(0))
