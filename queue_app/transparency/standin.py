"""A stand-in for the Commission's Transparency Database API, for tests and the demo.

It answers the three version-1 endpoints as the contract notes describe, validating every field
with the same rules the rest of the app uses (contract.py), and keeps what it stored in memory.
Test hooks make it misbehave the way the real service can: answer 429 or 503 for the next calls,
or store a batch and then drop the connection before answering (a lost 201), which is the case
the submitter's existing_puids handling exists for.

Run it from a test with `StandIn(token=...).start()` (an ephemeral loopback port) or from the
command line with `manage.py run_tdb_standin --port 8765`.
"""

from __future__ import annotations

import hmac
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from queue_app.transparency import contract

STATEMENT_PATH = "/api/v1/statement"
STATEMENTS_PATH = "/api/v1/statements"
EXISTING_PUID_PREFIX = "/api/v1/statement/existing-puid/"

# Bodies beyond this are refused unread: 100 statements at their longest are well under it.
MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Call:
    """One request the stand-in answered (never its token)."""

    method: str
    path: str
    status: int
    puids: tuple[str, ...]
    answered: bool = True


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]
    stored: tuple[str, ...] = ()


class StandIn:
    """An in-memory Transparency Database answering on a loopback port."""

    def __init__(
        self,
        *,
        token: str,
        host: str = "127.0.0.1",
        port: int = 0,
        platform_name: str = "Review Console stand-in",
        log: Callable[[str], None] | None = None,
    ) -> None:
        if not token:
            raise ValueError("the stand-in needs a token to check callers against")
        self._token = token
        self.platform_name = platform_name
        self._log = log
        self._lock = threading.Lock()
        self._stored: dict[str, dict[str, Any]] = {}
        self._next_id = 1
        self._failures: list[tuple[int, str | None]] = []
        self._lose_answers = 0
        self.calls: list[Call] = []
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._serving = False

    # -- running ---------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """Return the URL the API is served under, e.g. http://127.0.0.1:41234."""
        host, port = self._server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}"

    def start(self) -> StandIn:
        """Serve in a background thread and return self."""
        self._serving = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="tdb-standin",
            daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until shutdown() is called from another."""
        self._serving = True
        self._server.serve_forever()

    def shutdown(self) -> None:
        """Stop serving (if it started) and close the listening socket."""
        # socketserver's shutdown() waits for a serve_forever() that may never have begun.
        if self._serving:
            self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # -- test hooks and what was stored ----------------------------------------------------------

    def fail_next(self, count: int, *, status: int = 503, retry_after: str | None = None) -> None:
        """Answer the next `count` calls with `status` (429 or 5xx), storing nothing."""
        if status != 429 and not 500 <= status <= 599:
            raise ValueError(f"fail_next takes 429 or a 5xx status, not {status}")
        with self._lock:
            self._failures.extend([(status, retry_after)] * count)

    def lose_next_answer(self, count: int = 1) -> None:
        """Store the next `count` successful calls but drop each connection without answering."""
        with self._lock:
            self._lose_answers += count

    def stored(self) -> dict[str, dict[str, Any]]:
        """Return a copy of the stored statements by PUID, in the order they were stored."""
        with self._lock:
            return {puid: dict(record) for puid, record in self._stored.items()}

    def stored_puids(self) -> list[str]:
        """Return the stored PUIDs in the order they were stored."""
        with self._lock:
            return list(self._stored)

    # -- answering -------------------------------------------------------------------------------

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None
    ) -> Answer | None:
        """Return the answer to one request, or None to drop the connection unanswered."""
        route = self._route(method, path)
        if route is None:
            return _json(404, {"message": f"No route for {method} {urlsplit(path).path}."})
        with self._lock:
            if self._failures:
                status, retry_after = self._failures.pop(0)
                extra = {"Retry-After": retry_after} if retry_after is not None else {}
                message = "Too Many Attempts." if status == 429 else "Service Unavailable."
                return _json(status, {"message": message}, extra)
        presented = headers.get("authorization", "").encode()
        if not hmac.compare_digest(presented, f"Bearer {self._token}".encode()):
            return _json(401, {"message": "Unauthenticated."})
        if "application/json" not in headers.get("accept", ""):
            return _json(406, {"message": "Send Accept: application/json."})
        if route == "existing":
            return self._existing(unquote(urlsplit(path).path[len(EXISTING_PUID_PREFIX) :]))
        if "application/json" not in headers.get("content-type", ""):
            return _json(415, {"message": "Send the body as Content-Type: application/json."})
        try:
            payload = json.loads(body or b"")
        except (UnicodeDecodeError, ValueError):
            return _json(400, {"message": "The body is not valid JSON."})
        answer = self._store_one(payload) if route == "one" else self._store_many(payload)
        with self._lock:
            if answer.status == 201 and self._lose_answers > 0:
                self._lose_answers -= 1
                return None
        return answer

    def _route(self, method: str, path: str) -> str | None:
        path = urlsplit(path).path
        if method == "POST" and path == STATEMENT_PATH:
            return "one"
        if method == "POST" and path == STATEMENTS_PATH:
            return "many"
        if method == "GET" and path.startswith(EXISTING_PUID_PREFIX):
            return "existing"
        return None

    def _existing(self, puid: str) -> Answer:
        with self._lock:
            found = puid in self._stored
        if found:
            return _json(302, {"message": "statement found", "puid": puid})
        return _json(404, {"message": "statement not found", "puid": puid})

    def _store_one(self, payload: Any) -> Answer:
        errors = contract.validate_statement(payload)
        if errors:
            return _unprocessable(errors)
        with self._lock:
            if payload["puid"] in self._stored:
                return _taken([payload["puid"]])
            record = self._keep(payload)
        return _json(201, record, stored=(record["puid"],))

    def _store_many(self, payload: Any) -> Answer:
        if not isinstance(payload, dict) or "statements" not in payload:
            return _unprocessable({"statements": ['is required: send {"statements": [...]}']})
        statements = payload["statements"]
        errors = contract.validate_batch(statements)
        if errors:
            repeated = contract.duplicate_puids(statements) if isinstance(statements, list) else []
            if repeated:
                # As the real API does: PUIDs repeated inside the call come back as "existing"
                # too, although none of them is stored. A client must not take them as delivered.
                errors["existing_puids"] = repeated
            return _unprocessable(errors)
        with self._lock:
            taken = [s["puid"] for s in statements if s["puid"] in self._stored]
            if taken:
                return _taken(taken)
            records = [self._keep(statement) for statement in statements]
        return _json(201, {"statements": records}, stored=tuple(r["puid"] for r in records))

    def _keep(self, statement: dict[str, Any]) -> dict[str, Any]:
        # Called with the lock held.
        number = self._next_id
        self._next_id += 1
        record = {
            **statement,
            "uuid": str(uuid.uuid4()),
            "id": number,
            "puid": statement["puid"],
            "permalink": f"{self.base_url}/statement/{number}",
            "self": f"{self.base_url}{STATEMENT_PATH}/{number}",
            "created_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            "platform_name": self.platform_name,
        }
        self._stored[statement["puid"]] = record
        return record

    def record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)
        if self._log is not None:
            self._log(
                f"{call.method} {call.path} -> {call.status if call.answered else 'dropped'}"
                + (f" ({len(call.puids)} statement(s))" if call.puids else "")
            )


def _json(
    status: int,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    *,
    stored: tuple[str, ...] = (),
) -> Answer:
    return Answer(status=status, body=body, headers=headers or {}, stored=stored)


def _unprocessable(errors: dict[str, Any]) -> Answer:
    first_field, first_reasons = next(iter(errors.items()))
    count = sum(len(reasons) for key, reasons in errors.items() if key != "existing_puids")
    message = f"{first_field}: {first_reasons[0]}"
    if count > 1:
        message += f" (and {count - 1} more error{'s' if count > 2 else ''})"
    return _json(422, {"message": message, "errors": errors})


def _taken(puids: list[str]) -> Answer:
    reason = "the platform's unique identifier(s) given are already used by stored statements"
    return _json(422, {"message": reason, "errors": {"puid": [reason], "existing_puids": puids}})


def _handler_for(standin: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve(None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._send(_json(413, {"message": "The body is too large."}), ())
                self.close_connection = True
                return
            self._serve(self.rfile.read(length))

        def _serve(self, body: bytes | None) -> None:
            headers = {key.lower(): value for key, value in self.headers.items()}
            answer = standin.answer(self.command, self.path, headers, body)
            path = urlsplit(self.path).path
            if answer is None:
                # Stored, and now the answer is lost: close without a status line.
                self.close_connection = True
                standin.record(Call(self.command, path, 201, _sent_puids(body), answered=False))
                return
            self._send(answer, _sent_puids(body))

        def _send(self, answer: Answer, puids: tuple[str, ...]) -> None:
            # Recorded before answering, so a caller that has its answer finds the call listed.
            standin.record(Call(self.command, urlsplit(self.path).path, answer.status, puids))
            data = json.dumps(answer.body).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the stand-in's own log (record) says what matters, without headers

    return Handler


def _sent_puids(body: bytes | None) -> tuple[str, ...]:
    try:
        payload = json.loads(body or b"")
    except (UnicodeDecodeError, ValueError):
        return ()
    statements = payload.get("statements") if isinstance(payload, dict) else None
    if not isinstance(statements, list):
        statements = [payload]
    return tuple(
        s["puid"] for s in statements if isinstance(s, dict) and isinstance(s.get("puid"), str)
    )
