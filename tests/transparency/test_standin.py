"""The stand-in Transparency Database answers as the contract says, over real HTTP."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from queue_app.transparency.standin import StandIn
from tests.transparency.conftest import TOKEN, call
from tests.transparency.statements import (
    illegal_statement,
    incompatible_statement,
    minimal_statement,
)

ONE = "/api/v1/statement"
MANY = "/api/v1/statements"
STORED_KEYS = {"uuid", "id", "puid", "permalink", "self", "created_at", "platform_name"}


# -- 201 -------------------------------------------------------------------------------------------


def test_it_stores_one_statement_and_answers_it_as_stored(standin: StandIn) -> None:
    status, _, body = call(standin, "POST", ONE, illegal_statement("one-1"))
    assert status == 201
    assert set(body) >= STORED_KEYS
    assert body["puid"] == "one-1"
    assert body["self"] == f"{standin.base_url}/api/v1/statement/{body['id']}"
    assert body["permalink"] == f"{standin.base_url}/statement/{body['id']}"
    assert body["platform_name"] == "Review Console stand-in"
    assert body["decision_ground"] == "DECISION_GROUND_ILLEGAL_CONTENT"
    assert standin.stored_puids() == ["one-1"]


def test_it_stores_a_batch_and_answers_every_statement(standin: StandIn) -> None:
    statements = [illegal_statement("b-1"), incompatible_statement("b-2"), minimal_statement("b-3")]
    status, _, body = call(standin, "POST", MANY, {"statements": statements})
    assert status == 201
    assert [record["puid"] for record in body["statements"]] == ["b-1", "b-2", "b-3"]
    assert all(set(record) >= STORED_KEYS for record in body["statements"])
    assert len({record["uuid"] for record in body["statements"]}) == 3
    assert len({record["id"] for record in body["statements"]}) == 3
    assert standin.stored_puids() == ["b-1", "b-2", "b-3"]


# -- 401 and other refusals of the request ---------------------------------------------------------


@pytest.mark.parametrize("token", [None, "wrong-token", ""])
def test_it_refuses_a_missing_or_wrong_token(standin: StandIn, token: str | None) -> None:
    status, _, body = call(
        standin, "POST", MANY, {"statements": [illegal_statement()]}, token=token
    )
    assert (status, body) == (401, {"message": "Unauthenticated."})
    status, _, _ = call(standin, "GET", "/api/v1/statement/existing-puid/x", token=token)
    assert status == 401
    assert standin.stored_puids() == []


@pytest.mark.parametrize(
    ("headers", "raw", "status"),
    [
        ({"Accept": "text/html"}, None, 406),
        ({"Content-Type": "application/x-www-form-urlencoded"}, None, 415),
        ({}, b"{not json", 400),
    ],
)
def test_it_refuses_a_request_that_is_not_json(
    standin: StandIn, headers: dict[str, str], raw: bytes | None, status: int
) -> None:
    answer = call(standin, "POST", ONE, illegal_statement(), headers=headers, raw=raw)
    assert answer[0] == status
    assert standin.stored_puids() == []


def test_it_refuses_a_body_too_large_without_reading_it(standin: StandIn) -> None:
    host, port = standin.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(
            b"POST /api/v1/statements HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: 999999999\r\n\r\n"
        )
        status_line = connection.makefile("rb").readline()
    assert status_line.startswith(b"HTTP/1.1 413 ")
    assert standin.stored_puids() == []


def test_it_answers_404_for_an_unknown_path(standin: StandIn) -> None:
    assert call(standin, "POST", "/api/v2/statements", {"statements": []})[0] == 404
    assert call(standin, "GET", MANY)[0] == 404


# -- 422 -------------------------------------------------------------------------------------------


def test_it_refuses_a_statement_with_per_field_errors(standin: StandIn) -> None:
    statement = illegal_statement(category="NOPE", content_date="yesterday")
    status, _, body = call(standin, "POST", ONE, statement)
    assert status == 422
    assert set(body["errors"]) == {"category", "content_date"}
    assert body["message"].startswith("category: must be one of")
    assert body["message"].endswith("(and 1 more error)")
    assert standin.stored_puids() == []


def test_it_refuses_a_whole_batch_for_one_bad_statement(standin: StandIn) -> None:
    statements = [
        illegal_statement("w-1"),
        illegal_statement("w 2"),
        minimal_statement("w-3"),
    ]
    status, _, body = call(standin, "POST", MANY, {"statements": statements})
    assert status == 422
    assert list(body["errors"]) == ["statements.1.puid"]
    assert standin.stored_puids() == []


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"statements": []}, "at least 1 statement"),
        ({"statements": [illegal_statement(f"n-{n}") for n in range(101)]}, "at most 100"),
        ({"statement": [illegal_statement()]}, "is required"),
        ([illegal_statement()], "is required"),
    ],
)
def test_it_takes_one_to_a_hundred_statements_per_batch(
    standin: StandIn, payload: object, fragment: str
) -> None:
    status, _, body = call(standin, "POST", MANY, payload)
    assert status == 422
    assert fragment in body["errors"]["statements"][0]
    assert standin.stored_puids() == []


def test_it_refuses_a_puid_already_stored(standin: StandIn) -> None:
    assert call(standin, "POST", ONE, illegal_statement("taken"))[0] == 201
    status, _, body = call(standin, "POST", ONE, incompatible_statement("taken"))
    assert status == 422
    assert body["errors"]["existing_puids"] == ["taken"]
    assert body["errors"]["puid"]
    statements = [minimal_statement("fresh"), illegal_statement("taken")]
    status, _, body = call(standin, "POST", MANY, {"statements": statements})
    assert status == 422
    assert set(body["errors"]) == {"puid", "existing_puids"}
    assert body["errors"]["existing_puids"] == ["taken"]
    # Refused whole: the fresh statement was not stored either.
    assert standin.stored_puids() == ["taken"]
    assert standin.stored()["taken"]["decision_ground"] == "DECISION_GROUND_ILLEGAL_CONTENT"


def test_it_refuses_a_puid_repeated_inside_a_batch(standin: StandIn) -> None:
    statements = [illegal_statement("twice"), minimal_statement("once"), minimal_statement("twice")]
    status, _, body = call(standin, "POST", MANY, {"statements": statements})
    assert status == 422
    assert set(body["errors"]) == {"puid", "existing_puids"}
    assert body["errors"]["existing_puids"] == ["twice"]
    assert "unique within the call" in body["errors"]["puid"][0]
    assert standin.stored_puids() == []


# -- the existing-PUID check -----------------------------------------------------------------------


def test_it_says_whether_a_puid_is_stored(standin: StandIn) -> None:
    call(standin, "POST", ONE, illegal_statement("here_1"))
    status, _, body = call(standin, "GET", "/api/v1/statement/existing-puid/here_1")
    assert status == 302
    assert body == {"message": "statement found", "puid": "here_1"}
    status, _, body = call(standin, "GET", "/api/v1/statement/existing-puid/elsewhere")
    assert status == 404
    assert body["puid"] == "elsewhere"


# -- test hooks: 429, 503 and a lost answer --------------------------------------------------------


def test_it_answers_429_then_503_for_the_calls_it_is_told_to_fail(standin: StandIn) -> None:
    standin.fail_next(2, status=429, retry_after="7")
    standin.fail_next(1, status=503)
    payload = {"statements": [illegal_statement("later")]}
    first, second, third = (call(standin, "POST", MANY, payload) for _ in range(3))
    assert (first[0], first[1]["retry-after"]) == (429, "7")
    assert second[0] == 429
    assert third[0] == 503 and "retry-after" not in third[1]
    assert standin.stored_puids() == []
    assert call(standin, "POST", MANY, payload)[0] == 201
    assert standin.stored_puids() == ["later"]


def test_fail_next_takes_only_statuses_worth_a_retry(standin: StandIn) -> None:
    with pytest.raises(ValueError, match="429 or a 5xx"):
        standin.fail_next(1, status=400)


def test_it_stores_and_then_loses_the_answer(standin: StandIn) -> None:
    standin.lose_next_answer()
    with pytest.raises(http.client.RemoteDisconnected):
        call(standin, "POST", MANY, {"statements": [illegal_statement("lost-1")]})
    assert standin.stored_puids() == ["lost-1"]
    assert [c.answered for c in standin.calls] == [False]
    # Only the next success is lost: the one after is answered.
    assert call(standin, "POST", MANY, {"statements": [illegal_statement("lost-2")]})[0] == 201


def test_a_refusal_does_not_use_up_a_lost_answer(standin: StandIn) -> None:
    standin.lose_next_answer()
    assert call(standin, "POST", ONE, illegal_statement(category="NOPE"))[0] == 422
    with pytest.raises(http.client.RemoteDisconnected):
        call(standin, "POST", ONE, illegal_statement("kept"))
    assert standin.stored_puids() == ["kept"]


def test_its_record_of_calls_holds_no_token(standin: StandIn) -> None:
    call(standin, "POST", ONE, illegal_statement())
    assert standin.calls and TOKEN not in repr(standin.calls)


# -- the command ----------------------------------------------------------------------------------


def test_the_command_serves_until_sigterm(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "REVIEW_DEMO_TDB_TOKEN": TOKEN,
        # The command needs no database; an unreachable one keeps the embedded server out of it.
        "DATABASE_URL": "postgres://nobody@127.0.0.1:9/unused",
        "DEBUG": "true",
        "DJANGO_SETTINGS_MODULE": "reviewconsole.settings",
    }
    project = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "run_tdb_standin",
            "--port",
            "0",
            "--token-env",
            "REVIEW_DEMO_TDB_TOKEN",
        ],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert "Transparency Database stand-in at http://127.0.0.1:" in banner, banner
        url = banner.split(" at ", 1)[1].split(" ", 1)[0]
        status, _, body = call(url, "POST", MANY, {"statements": [illegal_statement("cmd-1")]})
        assert status == 201 and body["statements"][0]["puid"] == "cmd-1"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert "POST /api/v1/statements -> 201 (1 statement(s))" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def test_the_command_refuses_to_start_without_its_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "REVIEW_DEMO_TDB_TOKEN"}
    env |= {"DATABASE_URL": "postgres://nobody@127.0.0.1:9/unused", "DEBUG": "true"}
    project = Path(__file__).resolve().parents[2]
    finished = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "run_tdb_standin",
            "--port",
            "0",
            "--token-env",
            "REVIEW_DEMO_TDB_TOKEN",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode != 0
    assert "set REVIEW_DEMO_TDB_TOKEN to the token" in finished.stderr
