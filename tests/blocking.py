"""Deterministic interleavings: run a call on a second connection and wait until it is blocked.

The pattern of Django's own select_for_update tests, without their sleeps: the test holds a
transaction on its connection, starts the other session in a thread, and asks the lock manager
(pg_blocking_pids) when that session is waiting for this transaction; only then does it commit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection, connections

# An upper bound for the other session to reach its lock wait, so a broken test fails instead
# of hanging; it is never part of what a test asserts.
BLOCK_WAIT_LIMIT_S = 60


class Session:
    """A call run on its own database connection in a thread; result or error kept for later."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call = call
        self._connected = threading.Event()
        self.pid: int | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            connection.ensure_connection()
            self.pid = connection.connection.info.backend_pid
            self._connected.set()
            self.result = self._call()
        except BaseException as exc:  # handed to the test by outcome()
            self.error = exc
        finally:
            self._connected.set()
            connections.close_all()

    def start(self) -> None:
        self._thread.start()
        assert self._connected.wait(BLOCK_WAIT_LIMIT_S)

    def outcome(self) -> Any:
        """Wait for the call to end; return its result or raise its error."""
        self._thread.join(BLOCK_WAIT_LIMIT_S)
        assert not self._thread.is_alive(), "the second session never finished"
        if self.error is not None:
            raise self.error
        return self.result


def wait_until_blocked_by_me(*sessions: Session) -> None:
    """Return once every session waits for a lock this connection's transaction holds."""
    deadline = time.monotonic() + BLOCK_WAIT_LIMIT_S
    waiting = {session.pid: session for session in sessions}
    with connection.cursor() as cursor:
        while waiting:
            # pg_blocking_pids reads the lock manager directly (no per-transaction stats
            # snapshot), so polling it from inside the held transaction sees each wait begin.
            cursor.execute(
                "SELECT pid FROM unnest(%s::int[]) AS pid"
                " WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))",
                [list(waiting)],
            )
            for (pid,) in cursor.fetchall():
                del waiting[pid]
            if not waiting:
                return
            for session in waiting.values():
                assert session.error is None, session.error
            assert time.monotonic() < deadline, "a session never blocked on this transaction"
            time.sleep(0.005)
