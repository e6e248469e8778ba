"""The submitter against the stand-in over real HTTP on loopback."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from queue_app.transparency import submitter
from queue_app.transparency.standin import StandIn
from queue_app.transparency.submitter import (
    SubmissionResult,
    backoff_bounds,
    backoff_delay,
    parse_retry_after,
    submit,
    submit_with_retries,
)
from tests.transparency.conftest import TOKEN, TOKEN_ENV, call
from tests.transparency.statements import (
    illegal_statement,
    incompatible_statement,
    minimal_statement,
)


def statements(count: int, prefix: str = "rc-kyc") -> list[dict[str, Any]]:
    makers = (illegal_statement, incompatible_statement, minimal_statement)
    return [makers[n % 3](f"{prefix}-{n}") for n in range(count)]


def send(standin: StandIn, batch: list[dict[str, Any]], **options: Any) -> SubmissionResult:
    return submit(batch, base_url=standin.base_url, token_env=TOKEN_ENV, timeout=10, **options)


def sent_per_call(standin: StandIn) -> list[int]:
    return [len(c.puids) for c in standin.calls]


def test_it_sends_250_statements_in_three_calls(standin: StandIn) -> None:
    batch = statements(250)
    result = send(standin, batch)
    assert result.complete and result.failure is None and result.retry_after is None
    assert sent_per_call(standin) == [100, 100, 50]
    assert result.calls == 3
    assert standin.stored_puids() == [s["puid"] for s in batch]
    stored = standin.stored()
    assert all(result.delivered[p] == stored[p] for p in stored)
    assert result.delivered["rc-kyc-7"]["permalink"].startswith(standin.base_url)


def test_it_sends_no_puid_used_by_two_statements(standin: StandIn) -> None:
    batch = [illegal_statement("dup"), minimal_statement("single"), incompatible_statement("dup")]
    result = send(standin, batch)
    assert set(result.delivered) == {"single"}
    assert list(result.rejected) == ["dup"]
    assert "used by 2 statements in this submission" in result.rejected["dup"]["puid"][0]
    assert standin.stored_puids() == ["single"]
    assert sent_per_call(standin) == [1]


def test_it_takes_no_puid_repeated_in_a_call_as_delivered(standin: StandIn) -> None:
    # The database lists a PUID repeated inside a call among existing_puids, though it stored
    # nothing. Sent anyway (by a client without the local check), it must come back refused.
    batch = [illegal_statement("twice"), minimal_statement("once"), minimal_statement("twice")]
    status, _, body = call(standin, "POST", "/api/v1/statements", {"statements": batch})
    assert status == 422 and body["errors"]["existing_puids"] == ["twice"]
    result = SubmissionResult()
    settled = submitter._refused(result, batch, body)
    assert settled == {"twice"}
    assert result.delivered == {}
    assert "repeated 2 times in one call" in result.rejected["twice"]["puid"]
    assert standin.stored_puids() == []


def test_a_lost_201_is_settled_by_existing_puids_on_the_retry(standin: StandIn) -> None:
    batch = statements(150)
    standin.lose_next_answer()
    first = send(standin, batch)
    # The first hundred were stored, but the answer never came: nothing is known delivered.
    assert first.retryable and first.delivered == {} and first.last_status is None
    assert first.pending == [s["puid"] for s in batch]
    assert "RemoteDisconnected" in first.detail
    low, high = backoff_bounds(0)
    assert first.retry_after is not None and low <= first.retry_after <= high
    assert len(standin.stored_puids()) == 100

    second = send(standin, batch, attempt=1)
    assert second.complete
    assert [c.status for c in standin.calls] == [201, 422, 201]
    assert sent_per_call(standin) == [100, 100, 50]
    assert all(second.delivered[s["puid"]] is None for s in batch[:100])
    assert all(second.delivered[s["puid"]] for s in batch[100:])
    # None twice, none lost: each statement stored once, under consecutive ids.
    stored = standin.stored()
    assert list(stored) == [s["puid"] for s in batch]
    assert sorted(record["id"] for record in stored.values()) == list(range(1, 151))


def test_a_retry_mixing_stored_and_new_statements_sends_only_the_new(standin: StandIn) -> None:
    earlier, later = statements(30, "early"), statements(20, "late")
    standin.lose_next_answer()
    assert send(standin, earlier).retryable
    result = send(standin, earlier + later)
    assert result.complete
    assert [c.status for c in standin.calls] == [201, 422, 201]
    assert [c.puids for c in standin.calls][2] == tuple(s["puid"] for s in later)
    assert standin.stored_puids() == [s["puid"] for s in earlier + later]


def test_a_422_names_each_refused_statement_and_the_rest_go_through(standin: StandIn) -> None:
    batch = statements(5, "f")
    batch[1]["category"] = "STATEMENT_CATEGORY_SPAM"
    batch[3]["content_date"] = "2026-02-30"
    batch[3]["decision_facts"] = "x" * 5001
    result = send(standin, batch, check_locally=False)
    assert set(result.rejected) == {"f-1", "f-3"}
    assert list(result.rejected["f-1"]) == ["category"]
    assert "STATEMENT_CATEGORIES" in result.rejected["f-1"]["category"][0]
    assert set(result.rejected["f-3"]) == {"content_date", "decision_facts"}
    assert set(result.delivered) == {"f-0", "f-2", "f-4"}
    assert not result.pending and not result.retryable and not result.complete
    assert [c.status for c in standin.calls] == [422, 201]
    assert standin.stored_puids() == ["f-0", "f-2", "f-4"]
    assert [result.outcome(f"f-{n}") for n in range(5)] == [
        "delivered",
        "rejected",
        "delivered",
        "rejected",
        "delivered",
    ]
    assert sorted(result.explain("f-3").splitlines()) == [
        "content_date: must be a real calendar date; got '2026-02-30'",
        "decision_facts: must be at most 5000 characters (it has 5001)",
    ]


def test_the_local_check_refuses_before_sending(standin: StandIn) -> None:
    result = send(standin, [illegal_statement("bad", category="NOPE")])
    assert list(result.rejected) == ["bad"] and result.calls == 0
    assert standin.calls == []


def test_it_waits_out_a_429_as_retry_after_asks(standin: StandIn) -> None:
    standin.fail_next(1, status=429, retry_after="7")
    waits: list[float] = []
    result = submit_with_retries(
        statements(3),
        sleep=waits.append,
        base_url=standin.base_url,
        token_env=TOKEN_ENV,
        timeout=10,
    )
    assert result.complete and waits == [7.0]
    assert [c.status for c in standin.calls] == [429, 201]
    assert len(standin.stored_puids()) == 3


def test_it_backs_off_further_after_each_5xx(standin: StandIn) -> None:
    standin.fail_next(3, status=503)
    waits: list[float] = []
    result = submit_with_retries(
        statements(2),
        sleep=waits.append,
        base_url=standin.base_url,
        token_env=TOKEN_ENV,
        timeout=10,
    )
    assert result.complete and len(waits) == 3
    for attempt, wait in enumerate(waits):
        low, high = backoff_bounds(attempt)
        assert low <= wait <= high, (attempt, wait)
    assert [c.status for c in standin.calls] == [503, 503, 503, 201]


def test_it_gives_up_after_its_attempts_and_says_when_to_try_again(standin: StandIn) -> None:
    standin.fail_next(5, status=500)
    result = submit_with_retries(
        statements(2),
        attempts=2,
        sleep=lambda _: None,
        base_url=standin.base_url,
        token_env=TOKEN_ENV,
        timeout=10,
    )
    assert result.retryable and result.pending == ["rc-kyc-0", "rc-kyc-1"]
    assert result.last_status == 500 and result.retry_after is not None
    assert result.outcome("rc-kyc-0") == "retry"
    assert "500 from http://127.0.0.1:" in result.explain("rc-kyc-0")
    with pytest.raises(KeyError):
        result.outcome("never-sent")
    assert standin.stored_puids() == []


def test_a_401_fails_without_retry_and_never_shows_the_token(
    standin: StandIn, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "an-old-revoked-token")
    caplog.set_level(logging.DEBUG)
    result = submit_with_retries(
        statements(2), sleep=pytest.fail, base_url=standin.base_url, token_env=TOKEN_ENV
    )
    assert result.failure is not None and not result.retryable
    assert result.failure.startswith("401 from ") and TOKEN_ENV in result.failure
    assert result.pending == ["rc-kyc-0", "rc-kyc-1"] and result.retry_after is None
    assert result.calls == 1
    assert result.outcome("rc-kyc-1") == "failed" and result.explain("rc-kyc-1") == result.failure
    assert "an-old-revoked-token" not in caplog.text + repr(result)
    assert TOKEN not in caplog.text


def test_it_fails_when_the_token_variable_is_unset(
    standin: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV)
    result = send(standin, statements(1))
    assert (
        result.failure and f"{TOKEN_ENV} holding the Transparency Database token" in result.failure
    )
    assert standin.calls == []


def test_another_4xx_fails_without_retry(standin: StandIn) -> None:
    result = submit(statements(2), base_url=standin.base_url + "/wrong-prefix", token_env=TOKEN_ENV)
    assert result.last_status == 404 and not result.retryable
    assert result.failure and "404 from" in result.failure
    assert standin.stored_puids() == []


def test_a_refused_connection_is_worth_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    server = StandIn(token=TOKEN)
    url = server.base_url
    server.shutdown()  # nothing listens there any more
    result = submit(statements(1), base_url=url, token_env=TOKEN_ENV, attempt=3, rng=lambda: 1.0)
    assert result.retryable and result.retry_after == backoff_bounds(3)[1]
    assert "ConnectionRefusedError" in result.detail


def test_every_statement_needs_a_puid(standin: StandIn) -> None:
    with pytest.raises(ValueError, match="statement #1 has no puid"):
        send(standin, [illegal_statement(), {"category": "STATEMENT_CATEGORY_VIOLENCE"}])


def test_it_asks_whether_a_puid_is_stored(standin: StandIn) -> None:
    send(standin, [illegal_statement("asked-1")])
    options = {"base_url": standin.base_url, "token_env": TOKEN_ENV}
    assert submitter.puid_exists("asked-1", **options) is True
    assert submitter.puid_exists("asked-2", **options) is False


# -- backoff and Retry-After -----------------------------------------------------------------------


def test_backoff_doubles_up_to_its_cap_with_jitter_in_the_upper_half() -> None:
    assert backoff_bounds(0) == (1.0, 2.0)
    assert backoff_bounds(3) == (8.0, 16.0)
    assert backoff_bounds(50) == (450.0, 900.0)
    assert backoff_bounds(10_000) == (450.0, 900.0)
    assert backoff_delay(3, rng=lambda: 0.0) == 8.0
    assert backoff_delay(3, rng=lambda: 1.0) == 16.0
    assert backoff_delay(2, base=1, cap=3, rng=lambda: 0.5) == 2.25
    with pytest.raises(ValueError):
        backoff_bounds(-1)


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    now = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert (
        parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now=now)
        == 90.0
    )
    assert (
        parse_retry_after(format_datetime(now - timedelta(seconds=5), usegmt=True), now=now) == 0.0
    )
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-3") is None
    assert parse_retry_after(None) is None
