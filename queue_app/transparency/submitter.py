"""Send statements of reasons to the Transparency Database (POST /api/v1/statements).

`submit` makes one pass: it sends batches of up to 100 and sorts every statement into delivered,
refused (an operator must fix it: a dead job) or still to send (retry later, or not at all after
a 401 or another 4xx). It never sleeps; the caller's outbox decides when to try again, with
`retry_after` as the suggested wait. `submit_with_retries` loops over `submit` for the command
line and the demo.

What makes it safe to repeat: the database refuses a PUID it already holds, answering 422 with
errors.existing_puids. A 201 whose answer was lost (the connection dropped after the store) is
therefore retried as an ordinary failure, and the retry's 422 names the PUIDs that made it; those
count as delivered and the rest are sent again. No statement is stored twice, none is dropped.
The database never replaces what a PUID holds: a corrected statement needs a PUID of its own.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlsplit

from queue_app.transparency import contract

logger = logging.getLogger("queue_app.transparency")

STATEMENTS_PATH = "/api/v1/statements"
EXISTING_PUID_PATH = "/api/v1/statement/existing-puid/"

DEFAULT_TIMEOUT = 30.0
# Backoff when the answer names no Retry-After: the wait doubles per failed attempt from
# BASE_DELAY up to MAX_DELAY, and is drawn from the upper half of that (equal jitter) so that
# many workers retrying together spread out without any of them retrying too early.
BASE_DELAY = 2.0
MAX_DELAY = 900.0

# The 422 keys that are about PUIDs already stored (or repeated in the call), not about fields.
_PUID_KEYS = frozenset({"puid", "existing_puids"})
_POSITIONAL_KEY = re.compile(r"statements\.(\d+)(?:\.(.+))?")


@dataclass
class SubmissionResult:
    """Where each statement of one submission stands, by PUID."""

    #: PUID -> the statement as the database stored it (None when a retry learned of it only
    #: through existing_puids, after the first answer was lost).
    delivered: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    #: PUID -> field -> reasons: the database (or the local check) refused it; fix and resend.
    rejected: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    #: PUIDs neither delivered nor refused: send again after retry_after, unless failure is set.
    pending: list[str] = field(default_factory=list)
    #: Seconds to wait before sending the pending statements again (when retryable).
    retry_after: float | None = None
    #: Why the pending statements cannot be sent by trying again (a 401, another 4xx).
    failure: str | None = None
    #: 422 errors that named no statement, as the database sent them.
    batch_errors: dict[str, list[str]] = field(default_factory=dict)
    #: Status of the last answer (None when the last call got no answer).
    last_status: int | None = None
    #: What happened, in a line an operator can read (never the token).
    detail: str = ""
    #: HTTP calls made.
    calls: int = 0

    @property
    def complete(self) -> bool:
        """Say whether every statement was delivered."""
        return not self.pending and not self.rejected

    @property
    def retryable(self) -> bool:
        """Say whether pending statements wait only for a later try."""
        return bool(self.pending) and self.failure is None

    def outcome(self, puid: str) -> str:
        """Return "delivered", "rejected", "retry" or "failed" for one statement of the call."""
        if puid in self.delivered:
            return "delivered"
        if puid in self.rejected:
            return "rejected"
        if puid in self.pending:
            return "failed" if self.failure is not None else "retry"
        raise KeyError(f"{puid!r} was not part of this submission")

    def explain(self, puid: str) -> str:
        """Return why a statement was not delivered, in lines an operator can act on."""
        if puid in self.rejected:
            return contract.describe(self.rejected[puid])
        if puid in self.pending:
            return self.detail
        return ""


def backoff_bounds(
    attempt: int, *, base: float = BASE_DELAY, cap: float = MAX_DELAY
) -> tuple[float, float]:
    """Return the shortest and longest wait after `attempt` earlier failures (0 = the first)."""
    if attempt < 0:
        raise ValueError(f"attempt counts earlier failures and cannot be {attempt}")
    high = min(cap, base * 2 ** min(attempt, 64))
    return high / 2, high


def backoff_delay(
    attempt: int,
    *,
    base: float = BASE_DELAY,
    cap: float = MAX_DELAY,
    rng: Callable[[], float] = random.random,
) -> float:
    """Return a jittered wait within backoff_bounds(attempt)."""
    low, high = backoff_bounds(attempt, base=base, cap=cap)
    return low + (high - low) * rng()


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Return the seconds a Retry-After header asks for (delta or HTTP date), None if unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def submit(
    statements: Sequence[Mapping[str, Any]],
    *,
    base_url: str,
    token_env: str,
    timeout: float = DEFAULT_TIMEOUT,
    attempt: int = 0,
    batch_size: int = contract.MAX_BATCH,
    check_locally: bool = True,
    rng: Callable[[], float] = random.random,
) -> SubmissionResult:
    """Send statements in batches and say which were delivered, refused or must wait.

    `token_env` names the environment variable holding the platform's token. `attempt` counts
    the earlier failed submissions of these statements, for the backoff. With `check_locally`,
    statements the contract refuses are refused here without being sent.
    """
    if not 1 <= batch_size <= contract.MAX_BATCH:
        raise ValueError(f"batch_size must be 1 to {contract.MAX_BATCH}, not {batch_size}")
    for index, statement in enumerate(statements):
        if not isinstance(statement, Mapping) or not isinstance(statement.get("puid"), str):
            raise ValueError(f"statement #{index} has no puid: each one is tracked by its PUID")
    result = SubmissionResult()
    uses = Counter(statement["puid"] for statement in statements)
    queue: list[Mapping[str, Any]] = []
    for statement in statements:
        puid = statement["puid"]
        if uses[puid] > 1:
            result.rejected[puid] = {
                "puid": [
                    f"is used by {uses[puid]} statements in this submission; a PUID names one "
                    "statement, so none of them was sent"
                ]
            }
        elif check_locally and (errors := contract.validate_statement(statement)):
            result.rejected[puid] = errors
        else:
            queue.append(statement)

    token = os.environ.get(token_env, "")
    if queue and not token:
        result.pending = [statement["puid"] for statement in queue]
        result.failure = result.detail = (
            f"the environment variable {token_env} holding the Transparency Database token "
            "is not set"
        )
        return result

    url = base_url.rstrip("/") + STATEMENTS_PATH
    while queue:
        batch = queue[:batch_size]
        result.calls += 1
        try:
            status, headers, body = _post_json(url, {"statements": list(batch)}, token, timeout)
        except (OSError, http.client.HTTPException) as exc:
            # Refused, timed out, or dropped after the request went out: the batch may have been
            # stored. The next try learns which from existing_puids.
            result.last_status = None
            return _wait(
                result,
                queue,
                backoff_delay(attempt, rng=rng),
                f"no answer from {_where(url)} ({type(exc).__name__}: {exc}); may be stored",
            )
        result.last_status = status
        if status == 201:
            _delivered(result, batch, body)
            queue = queue[len(batch) :]
            logger.info("transparency database stored %d statement(s)", len(batch))
        elif status == 422:
            handled = _refused(result, batch, body)
            queue = [statement for statement in queue if statement["puid"] not in handled]
        elif status == 401:
            return _fail(
                result,
                queue,
                f"401 from {_where(url)}: the token in {token_env} is missing, wrong or replaced",
            )
        elif status == 429 or status >= 500 or status < 400:
            delay = parse_retry_after(headers.get("retry-after"))
            return _wait(
                result,
                queue,
                delay if delay is not None else backoff_delay(attempt, rng=rng),
                f"{status} from {_where(url)}: nothing stored; {_message(body)}",
            )
        else:
            return _fail(result, queue, f"{status} from {_where(url)}: {_message(body)}")
    result.detail = (
        f"{len(result.delivered)} delivered, {len(result.rejected)} refused "
        f"in {result.calls} call(s)"
    )
    return result


def submit_with_retries(
    statements: Sequence[Mapping[str, Any]],
    *,
    attempts: int = 5,
    sleep: Callable[[float], None] = time.sleep,
    **options: Any,
) -> SubmissionResult:
    """Submit, waiting out retryable failures, for at most `attempts` passes."""
    by_puid = {statement["puid"]: statement for statement in statements}
    total = SubmissionResult()
    remaining: list[Mapping[str, Any]] = list(statements)
    for attempt in range(attempts):
        result = submit(remaining, attempt=attempt, **options)
        total.delivered.update(result.delivered)
        total.rejected.update(result.rejected)
        total.batch_errors.update(result.batch_errors)
        total.calls += result.calls
        total.pending, total.retry_after, total.failure = (
            result.pending,
            result.retry_after,
            result.failure,
        )
        total.last_status, total.detail = result.last_status, result.detail
        if not result.retryable or attempt == attempts - 1:
            break
        sleep(result.retry_after or 0.0)
        remaining = [by_puid[puid] for puid in result.pending]
    return total


def puid_exists(
    puid: str, *, base_url: str, token_env: str, timeout: float = DEFAULT_TIMEOUT
) -> bool:
    """Ask the database whether a statement with this PUID is stored (302 yes, 404 no)."""
    url = base_url.rstrip("/") + EXISTING_PUID_PATH + quote(puid, safe="")
    status, _headers, body = _request("GET", url, None, os.environ.get(token_env, ""), timeout)
    if status == 302:
        return True
    if status == 404:
        return False
    raise RuntimeError(f"{status} from {_where(url)}: {_message(body)}")


# -- sorting the answers ---------------------------------------------------------------------------


def _delivered(result: SubmissionResult, batch: list[Mapping[str, Any]], body: Any) -> None:
    records = body.get("statements") if isinstance(body, dict) else None
    by_puid = {
        record["puid"]: record
        for record in (records if isinstance(records, list) else [])
        if isinstance(record, dict) and isinstance(record.get("puid"), str)
    }
    # 201 is the only success, and it covers the whole batch even if its body is unreadable.
    for statement in batch:
        result.delivered[statement["puid"]] = by_puid.get(statement["puid"], {})


def _refused(result: SubmissionResult, batch: list[Mapping[str, Any]], body: Any) -> set[str]:
    """Sort a 422 into delivered and refused statements; return the PUIDs settled."""
    sent = [statement["puid"] for statement in batch]
    counts = Counter(sent)
    errors = body.get("errors") if isinstance(body, dict) else None
    if not isinstance(errors, dict) or not errors:
        reasons = {"statements": [f"refused (422) without field errors: {_message(body)}"]}
        return _refuse_all(result, sent, reasons)

    settled: set[str] = set()
    listed = errors.get("existing_puids")
    existing = [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []
    field_errors = {key: value for key, value in errors.items() if key not in _PUID_KEYS}
    puid_reasons = _reasons(errors.get("puid")) or ["is not unique"]
    for puid in existing:
        if counts[puid] > 1:
            # Listed because it repeats inside the call, not because it is stored.
            result.rejected.setdefault(puid, {})["puid"] = [
                *puid_reasons,
                f"repeated {counts[puid]} times in one call",
            ]
            settled.add(puid)
        elif counts[puid] == 1 and not field_errors:
            # Already stored, by an earlier call whose 201 we never read.
            result.delivered[puid] = None
            settled.add(puid)

    unplaced: dict[str, list[str]] = {}
    for key, reasons in field_errors.items():
        match = _POSITIONAL_KEY.fullmatch(str(key))
        if match and int(match.group(1)) < len(sent):
            puid = sent[int(match.group(1))]
            result.rejected.setdefault(puid, {})[match.group(2) or "statement"] = _reasons(reasons)
            settled.add(puid)
        else:
            unplaced[str(key)] = _reasons(reasons)
    if unplaced or not settled:
        # Errors naming no statement (or a 422 that settles none) refuse the whole batch: sending
        # it again unchanged would only be refused again.
        unplaced = unplaced or {"puid": puid_reasons}
        result.batch_errors.update(unplaced)
        settled |= _refuse_all(result, [p for p in sent if p not in settled], unplaced)
    return settled


def _refuse_all(
    result: SubmissionResult, puids: list[str], reasons: dict[str, list[str]]
) -> set[str]:
    for puid in puids:
        for key, why in reasons.items():
            result.rejected.setdefault(puid, {}).setdefault(key, []).extend(why)
    return set(puids)


def _reasons(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(reason) for reason in value]
    return [] if value is None else [str(value)]


def _wait(
    result: SubmissionResult, queue: list[Mapping[str, Any]], delay: float, detail: str
) -> SubmissionResult:
    result.pending = [statement["puid"] for statement in queue]
    result.retry_after = delay
    result.detail = f"{detail}; {len(result.pending)} statement(s) to send in {delay:.0f}s"
    logger.warning("transparency database: %s", result.detail)
    return result


def _fail(
    result: SubmissionResult, queue: list[Mapping[str, Any]], detail: str
) -> SubmissionResult:
    result.pending = [statement["puid"] for statement in queue]
    result.failure = result.detail = detail
    logger.error("transparency database: %s", detail)
    return result


def _message(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"][:300]
    return "no message"


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


# -- HTTP ------------------------------------------------------------------------------------------


def _post_json(
    url: str, payload: dict[str, Any], token: str, timeout: float
) -> tuple[int, dict[str, str], Any]:
    return _request("POST", url, json.dumps(payload).encode(), token, timeout)


def _request(
    method: str, url: str, body: bytes | None, token: str, timeout: float
) -> tuple[int, dict[str, str], Any]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the Transparency Database URL must be http(s)://host/...: {url!r}")
    connection_class = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_class(parts.hostname, parts.port, timeout=timeout)
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
    }
    if body is not None:
        headers["Content-Type"] = "application/json"
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(method, target, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        answer_headers = {name.lower(): value for name, value in response.getheaders()}
        status = response.status
    finally:
        connection.close()
    try:
        decoded = json.loads(data) if data else None
    except ValueError:
        decoded = None
    return status, answer_headers, decoded
