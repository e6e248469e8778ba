"""A content-moderation queue with a statement policy, a receiving platform, a stand-in TDB."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from queue_app.apply import apply_batch
from queue_app.models import Queue, StatementDelivery, StatementOfReasons
from queue_app.transparency.standin import StandIn
from tests.statements.conftest import carol, decide, posts  # noqa: F401 (fixtures)

SECRET = "notice-secret-for-tests"
SECRET_ENV = "REVIEW_TEST_NOTICE_SECRET"
TOKEN = "tdb-delivery-token-77c1"
TOKEN_ENV = "REVIEW_TEST_TDB_TOKEN"


@dataclass
class Platform:
    """The upstream platform: records every POST, keeps the first per Idempotency-Key."""

    url: str = ""
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    kept: dict[str, bytes] = field(default_factory=dict)
    replies: list[int] = field(default_factory=list)
    # Set by the server when a request has arrived; it answers only once `release` is set.
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def keys(self) -> list[str]:
        return [headers["Idempotency-Key"] for headers, _ in self.requests]


@pytest.fixture
def platform() -> Iterator[Platform]:
    state = Platform()
    state.release.set()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append((dict(self.headers), body))
            reply = state.replies.pop(0) if state.replies else 200
            if reply < 300:
                state.kept.setdefault(self.headers["Idempotency-Key"], body)
            state.arrived.set()
            state.release.wait(30)
            self.send_response(reply)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/notices"
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def notifying_posts(posts: Queue, platform: Platform, monkeypatch: pytest.MonkeyPatch) -> Queue:  # noqa: F811
    monkeypatch.setenv(SECRET_ENV, SECRET)
    posts.webhook_url = platform.url
    posts.webhook_secret_env = SECRET_ENV
    posts.save()
    return posts


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[StandIn]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with StandIn(token=TOKEN) as server:
        settings.REVIEW_TDB_URL = server.base_url
        settings.REVIEW_TDB_TOKEN_ENV = TOKEN_ENV
        yield server


def built(queue: Queue, reviewer: Any, count: int = 1, **options: Any) -> list[StatementOfReasons]:
    """Decide `count` items and apply them: their statements, with their delivery jobs."""
    decisions = [decide(queue, reviewer, **options) for _ in range(count)]
    while apply_batch():
        pass
    return [StatementOfReasons.objects.get(decision=d) for d in decisions]


def make_due() -> None:
    StatementDelivery.objects.filter(done_at__isnull=True).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )
