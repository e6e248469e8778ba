"""The webhook effect against a real HTTP server on loopback."""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from hashlib import sha256
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db.models import F

from queue_app import effects
from queue_app.apply import RetryPolicy, apply_one
from queue_app.models import AppliedDecision, EffectJob
from queue_app.services import database_now, retry_effect_jobs
from tests.worker.conftest import decide

pytestmark = pytest.mark.django_db

SECRET = "s3cret-for-tests"
SECRET_ENV = "REVIEW_TEST_WEBHOOK_SECRET"


@dataclass
class Receiver:
    """A loopback HTTP server answering each POST with the next scripted reply."""

    replies: list[int | str] = field(default_factory=list)
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append((dict(self.headers), body))
            reply = state.replies.pop(0) if state.replies else 200
            if reply == "hang":
                time.sleep(1.0)  # longer than the read timeout the test sets
                return
            self.send_response(int(reply))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/review?source=test"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def webhook_queue(queue, receiver, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, SECRET)
    monkeypatch.setattr(effects, "WEBHOOK_READ_TIMEOUT", 0.3)
    queue.effect = "webhook"
    queue.webhook_url = receiver.url
    queue.webhook_secret_env = SECRET_ENV
    queue.save()
    return queue


def _seconds_until_next_attempt(decision_id: int) -> float:
    job = EffectJob.objects.get(decision_id=decision_id)
    return (job.next_attempt_at - database_now()).total_seconds()


def _make_due_now() -> None:
    EffectJob.objects.update(next_attempt_at=F("next_attempt_at") - timedelta(days=1))


def test_it_retries_with_growing_delays_then_dies_and_an_operator_retry_succeeds(
    webhook_queue, receiver, alice, retrier
):
    [decision] = decide(webhook_queue, alice, 1)
    receiver.replies = [500, "hang", 503, 502]
    policy = RetryPolicy(max_attempts=4, backoff_base=10.0)

    delays = []
    for _ in range(3):
        assert apply_one(policy=policy)
        delays.append(_seconds_until_next_attempt(decision.pk))
        _make_due_now()
    assert apply_one(policy=policy)

    job = EffectJob.objects.get(decision=decision)
    assert job.dead and job.attempts == 4 and job.done_at is None
    assert "HTTP 502" in job.last_error
    assert delays == sorted(delays) and delays[0] < delays[-1]
    assert 5 - 1 <= delays[0] <= 10 + 1  # first wait within [base/2, base], clock slack
    assert not AppliedDecision.objects.filter(decision=decision).exists()

    assert retry_effect_jobs(decision_ids=[decision.pk], operator=retrier) == 1
    # The retry stamps statement time; this whole test is one transaction whose now() is
    # earlier, so step the clock as a later worker transaction would see it.
    _make_due_now()
    assert apply_one(policy=policy)

    assert EffectJob.objects.get(decision=decision).done_at is not None
    assert AppliedDecision.objects.filter(decision=decision).exists()
    assert len(receiver.requests) == 5
    bodies = {body for _, body in receiver.requests}
    assert len(bodies) == 1, "every attempt sends the same bytes"
    for headers, body in receiver.requests:
        assert headers["Idempotency-Key"] == f"decision-{decision.pk}"
        expected = hmac.new(SECRET.encode(), body, sha256).hexdigest()
        assert hmac.compare_digest(headers["X-Review-Signature"], f"sha256={expected}")
        assert headers["Content-Type"] == "application/json"
    event = json.loads(bodies.pop())
    assert event["decision_id"] == decision.pk
    assert event["verdict"] == "approve"
    assert event["reason_code"] == "verified"
    assert event["item_subject"] == decision.item.subject
    assert event["supersedes"] is None and event["corrected_verdict"] is None
    assert event["item_sequence"] == 1


def test_a_timeout_is_recorded_as_transient(webhook_queue, receiver, alice):
    [decision] = decide(webhook_queue, alice, 1)
    receiver.replies = ["hang"]

    assert apply_one()

    job = EffectJob.objects.get(decision=decision)
    assert not job.dead and job.attempts == 1
    assert "timed out" in job.last_error


def test_a_refusal_goes_dead_at_once(webhook_queue, receiver, alice):
    [decision] = decide(webhook_queue, alice, 1)
    receiver.replies = [401]

    assert apply_one()

    job = EffectJob.objects.get(decision=decision)
    assert job.dead and job.attempts == 1
    assert "HTTP 401" in job.last_error


def test_a_rate_limit_is_retried(webhook_queue, receiver, alice):
    [decision] = decide(webhook_queue, alice, 1)
    receiver.replies = [429]

    assert apply_one()

    assert not EffectJob.objects.get(decision=decision).dead


def test_a_missing_secret_goes_dead_with_its_variable_named(
    webhook_queue, receiver, alice, monkeypatch
):
    monkeypatch.delenv(SECRET_ENV)
    [decision] = decide(webhook_queue, alice, 1)

    assert apply_one()

    job = EffectJob.objects.get(decision=decision)
    assert job.dead
    assert SECRET_ENV in job.last_error
    assert receiver.requests == []


def test_an_unreachable_receiver_is_transient(webhook_queue, alice):
    webhook_queue.webhook_url = "http://127.0.0.1:9/nothing-listens-here"
    webhook_queue.save()
    [decision] = decide(webhook_queue, alice, 1)

    assert apply_one()

    job = EffectJob.objects.get(decision=decision)
    assert not job.dead
    assert "unreachable" in job.last_error
