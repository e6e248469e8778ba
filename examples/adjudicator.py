#!/usr/bin/env python3
"""Review Console adjudicator: lease batches, decide what a rule can, release the rest.

The rule: a reconciliation item whose payload says match_decision == "MATCHED" with a variance
of exactly zero is approved; everything else is left for people. Standard library only, so it
runs anywhere Python does:

    REVIEW_API_TOKEN=rc_... python examples/adjudicator.py \\
        --base-url http://127.0.0.1:8000 --queue reconciliation --until-empty

How it behaves:
- Items it cannot decide are *held* (their leases kept) until the batch stream runs dry, then
  released together: holding them means the next lease call hands out fresh items instead of
  the same undecidable ones, so one pass leases each item once.
- When the queue is empty it sleeps a random interval between --poll-min and --poll-max
  seconds (jitter: a fleet of workers must not poll in lockstep), or exits with --until-empty.
- SIGTERM or Ctrl-C: it finishes the item in hand, releases what it holds, and exits 0.
- Every decision is fenced by the lease token and the evidence hash the lease returned; a
  409 (lease lost, evidence replaced) is logged and skipped, never retried blindly.

Caveat: every lease counts toward the queue's escalation threshold, so in continuous mode each
pass over an undecidable item brings it one lease closer to auto-escalation. Run it with
--until-empty after each intake batch, or on queues whose threshold allows for it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import sys
import time
import urllib.error
import urllib.request
from decimal import Decimal, InvalidOperation
from typing import Any

log = logging.getLogger("adjudicator")

# Transport failures (server restarting, 503 busy) are retried this many times with backoff.
RETRIES = 5


class ApiError(Exception):
    """A non-2xx answer from the API, with its error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class Api:
    """A minimal JSON client for /api/v1/ (exact decimals both ways)."""

    def __init__(self, base_url: str, token: str, timeout: float = 10.0) -> None:
        self.base = base_url.rstrip("/") + "/api/v1"
        self.token = token
        self.timeout = timeout

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        data = json.dumps(body, default=str).encode()
        for attempt in range(RETRIES + 1):
            request = urllib.request.Request(
                self.base + path,
                data=data,
                method="POST",
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json",
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return response.status, _loads(response.read())
            except urllib.error.HTTPError as exc:
                payload = _loads(exc.read() or b"{}")
                error = payload.get("error", {}) if isinstance(payload, dict) else {}
                if exc.code >= 500 and attempt < RETRIES:
                    _backoff(attempt)
                    continue
                code, message = error.get("code", "error"), error.get("message", "")
                raise ApiError(exc.code, code, message) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt == RETRIES:
                    raise ApiError(0, "unreachable", str(exc)) from None
                _backoff(attempt)
        raise AssertionError("unreachable")


def _loads(raw: bytes) -> Any:
    return json.loads(raw, parse_float=Decimal)


def _backoff(attempt: int) -> None:
    time.sleep(min(10.0, 0.2 * 2**attempt) * random.uniform(0.5, 1.5))


def _is_zero(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    try:
        return Decimal(str(value)) == 0
    except InvalidOperation:
        return False


def can_approve(payload: Any) -> bool:
    """The rule: a MATCHED reconciliation with zero variance needs no person."""
    return (
        isinstance(payload, dict)
        and payload.get("match_decision") == "MATCHED"
        and _is_zero(payload.get("variance_amount"))
    )


class Adjudicator:
    def __init__(self, api: Api, args: argparse.Namespace) -> None:
        self.api = api
        self.args = args
        self.stopping = False
        self.counts = {"approved": 0, "released": 0, "lost": 0, "passes": 0}

    def stop(self, *_: Any) -> None:
        log.info("stop requested; finishing the item in hand")
        self.stopping = True

    def lease(self) -> list[dict[str, Any]]:
        _, body = self.api.post(
            f"/queues/{self.args.queue}/leases",
            {"batch_size": self.args.batch_size, "lease_seconds": self.args.lease_seconds},
        )
        return body["items"]

    def approve(self, entry: dict[str, Any]) -> bool:
        """Approve the item; return False if it stays ours undecided (its evidence changed)."""
        try:
            self.api.post(
                f"/items/{entry['id']}/decision",
                {
                    "lease_token": entry["lease_token"],
                    "verdict": "approve",
                    "reason_code": self.args.reason,
                    "evidence_hash": entry["evidence_hash"],
                    "note": "auto-approved: MATCHED with zero variance",
                },
            )
            self.counts["approved"] += 1
            return True
        except ApiError as exc:
            if exc.status != 409:
                raise
            log.warning("item %s not decided: %s", entry["id"], exc.message)
            if exc.code == "evidence_changed":
                # Still leased to us, but what the rule judged is gone: give it back with the
                # rest rather than guess about the new evidence.
                return False
            self.counts["lost"] += 1  # the lease was lost: someone else has the item now
            return True

    def release(self, held: dict[int, str]) -> None:
        for item_id, token in held.items():
            try:
                self.api.post(f"/items/{item_id}/release", {"lease_token": token})
                self.counts["released"] += 1
            except ApiError as exc:
                if exc.status != 409:
                    raise
                # Expired and taken by someone else: nothing left to give back.
                self.counts["lost"] += 1
        held.clear()

    def one_pass(self) -> None:
        """Lease until the stream yields nothing new, then give back what was held."""
        held: dict[int, str] = {}
        try:
            while not self.stopping:
                batch = self.lease()
                new = [entry for entry in batch if entry["id"] not in held]
                for entry in batch:
                    if entry["id"] in held:
                        held[entry["id"]] = entry["lease_token"]  # our own lapsed lease, back
                if not new:
                    break
                for entry in new:
                    # Stopping: hold the rest untouched, so it is all given back below.
                    done = (
                        not self.stopping and can_approve(entry["payload"]) and self.approve(entry)
                    )
                    if not done:
                        held[entry["id"]] = entry["lease_token"]
        finally:
            self.release(held)
        self.counts["passes"] += 1

    def run(self) -> int:
        while not self.stopping:
            # One pass leases until the queue yields nothing new, so it is "until empty".
            self.one_pass()
            if self.args.until_empty:
                break
            # Sleep in small steps so a stop request is honoured promptly.
            deadline = time.monotonic() + random.uniform(self.args.poll_min, self.args.poll_max)
            while not self.stopping and time.monotonic() < deadline:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        log.info("done: %s", self.counts)
        print(json.dumps(self.counts), flush=True)
        return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base-url", default=os.environ.get("REVIEW_API_URL", "http://127.0.0.1:8000")
    )
    parser.add_argument(
        "--token", default=os.environ.get("REVIEW_API_TOKEN"), help="or REVIEW_API_TOKEN"
    )
    parser.add_argument("--queue", required=True, help="queue slug")
    parser.add_argument("--batch-size", type=int, default=20, help="1-200 (default 20)")
    parser.add_argument("--lease-seconds", type=int, default=60, help="1-120 (default 60)")
    parser.add_argument("--reason", default="within_tolerance", help="approve reason code")
    parser.add_argument("--poll-min", type=float, default=0.5, help="seconds (default 0.5)")
    parser.add_argument("--poll-max", type=float, default=5.0, help="seconds (default 5)")
    parser.add_argument("--until-empty", action="store_true", help="exit when nothing is left")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("an API token is required (--token or REVIEW_API_TOKEN)")
    if not 0 <= args.poll_min <= args.poll_max:
        parser.error("need 0 <= --poll-min <= --poll-max")
    return args


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = parse_args(argv)
    worker = Adjudicator(Api(args.base_url, args.token), args)
    signal.signal(signal.SIGTERM, worker.stop)
    signal.signal(signal.SIGINT, worker.stop)
    try:
        return worker.run()
    except ApiError as exc:
        log.error("giving up: %s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
