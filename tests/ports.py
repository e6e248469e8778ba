"""Loopback ports for servers a test starts in another process."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now.

    The kernel picks it, so two test runs on one machine (CI's two suites, a developer's run
    beside them) never reach for the same one. Another process could take it before the server
    binds; the caller's start-up check sees that server exit.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
