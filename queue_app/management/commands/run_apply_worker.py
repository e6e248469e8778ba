"""Drain the outbox: carry every decision out exactly once (see queue_app/apply.py).

The loop only does one batch, asks whether there was work, and otherwise waits: for a NOTIFY
on ``queue_app_effect_jobs`` (sent just after a decision commits, runner.wake_apply_workers)
or the jittered poll interval, whichever comes first. Signals, reconnects and the escalation
sweep's cadence live here too; everything that touches a decision is a service.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import random
import signal
import time
from types import FrameType
from typing import Any

import psycopg
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.db.backends.signals import connection_created

from queue_app import appeal_delivery, chain, chain_checkpoints, delivery, effects, services
from queue_app.apply import BATCH_SIZE_RANGE, RetryPolicy, apply_batch
from queue_app.errors import EffectError, InvalidBounds
from reviewconsole import gc_tuning

logger = logging.getLogger("queue_app.apply")

CHANNEL = "queue_app_effect_jobs"
# A runaway statement is cancelled instead of holding locks; a transaction left idle (a handler
# stuck outside the database) is ended by the server. The idle budget must exceed the slowest
# handler's time away from the database (a webhook's connect + read timeouts).
SESSION_SETTINGS = {
    "statement_timeout": "30s",
    "idle_in_transaction_session_timeout": "60s",
    "application_name": "review-console-apply-worker",
}
RECONNECT_BACKOFF = (0.5, 30.0)


def _configure_session(sender: Any, connection: Any, **kwargs: Any) -> None:
    # Runs for every new connection this process opens, so a reconnect keeps the guards.
    if settings.REVIEW_TRANSACTION_POOLER:
        # Behind a pooler in transaction mode a session setting would stay on whichever server
        # connection ran it and govern other clients' transactions: the guards belong on the
        # worker's role there (ALTER ROLE ... SET, docs/scaling.md).
        return
    with connection.cursor() as cursor:
        for name, value in SESSION_SETTINGS.items():
            cursor.execute("SELECT set_config(%s, %s, false)", [name, value])


class Command(BaseCommand):
    help = "Apply recorded decisions' effects exactly once; wakes on NOTIFY, polls as a fallback."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Drain what is due, then exit.")
        parser.add_argument(
            "--batch-size", type=int, default=10, help="Decisions per transaction (1..500)."
        )
        parser.add_argument(
            "--poll-interval",
            type=float,
            default=1.0,
            help="Seconds between polls when no NOTIFY arrives (jittered; 0.05..60).",
        )
        parser.add_argument(
            "--max-attempts", type=int, default=10, help="Attempts before a job is dead (1..100)."
        )
        parser.add_argument(
            "--backoff-base",
            type=float,
            default=2.0,
            help="Seconds before the first retry; doubles on each further failure.",
        )
        parser.add_argument(
            "--escalate-every",
            type=float,
            default=30.0,
            help="Seconds between sweeps for abandoned items to escalate; 0 disables.",
        )
        parser.add_argument(
            "--seal-every",
            type=float,
            default=1.0,
            help=(
                "Seconds between sealing rounds (committed decisions into the chain); 0 "
                "disables (then run seal_decisions some other way)."
            ),
        )
        parser.add_argument(
            "--checkpoint-every",
            type=float,
            default=0.0,
            help=(
                "Minutes between signed checkpoints of the decision chain written to "
                "REVIEW_CHECKPOINT_DIR (and REVIEW_CHECKPOINT_WEBHOOK); 0 disables."
            ),
        )
        parser.add_argument(
            "--no-notify", action="store_true", help="Poll only (for comparison); no LISTEN."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            effects.registered()
        except ImproperlyConfigured as exc:
            # Refuse to start rather than fail every job of the queues using these effects.
            raise CommandError(str(exc)) from None
        low, high = BATCH_SIZE_RANGE
        if not low <= options["batch_size"] <= high:
            raise CommandError(f"--batch-size must be between {low} and {high}.")
        if not 0.05 <= options["poll_interval"] <= 60:
            raise CommandError("--poll-interval must be between 0.05 and 60 seconds.")
        if options["escalate_every"] < 0:
            raise CommandError("--escalate-every must be 0 (off) or a number of seconds.")
        if options["seal_every"] < 0:
            raise CommandError("--seal-every must be 0 (off) or a number of seconds.")
        if options["checkpoint_every"] < 0:
            raise CommandError("--checkpoint-every must be 0 (off) or a number of minutes.")
        if options["checkpoint_every"]:
            try:
                # Refuse to start without a usable key rather than fail every N minutes.
                chain_checkpoints.signing_key()
            except chain_checkpoints.CheckpointError as exc:
                raise CommandError(exc.message) from None
        try:
            policy = RetryPolicy(
                max_attempts=options["max_attempts"], backoff_base=options["backoff_base"]
            )
        except InvalidBounds as exc:
            raise CommandError(
                f"{exc.message} (--max-attempts 1..100, --backoff-base > 0)."
            ) from None
        worker = ApplyWorker(
            batch_size=options["batch_size"],
            poll_interval=options["poll_interval"],
            escalate_every=options["escalate_every"],
            checkpoint_every=options["checkpoint_every"] * 60,
            seal_every=options["seal_every"],
            policy=policy,
            notify=not options["no_notify"],
        )
        connection_created.connect(_configure_session)
        # A connection opened before the receiver existed (settings checks) gets the guards too.
        connection.close()
        worker.install_signal_handlers()
        if not options["once"]:
            # A worker lives for days: what it has loaded is frozen out of the collector's
            # scans (reviewconsole/gc_tuning.py). A --once run ends too soon to gain anything.
            gc_tuning.tune()
            worker.run()
            return
        try:
            worker.drain()
        except DatabaseError as exc:
            # Cron runs again; say what happened without a traceback.
            raise CommandError(
                f"Stopped on a database error; due decisions stay due, run again later: {exc}"
            ) from None


class ApplyWorker:
    """The loop: one batch, then wait; stop cleanly on a signal; reconnect with backoff."""

    def __init__(
        self,
        *,
        batch_size: int,
        poll_interval: float,
        escalate_every: float,
        policy: RetryPolicy,
        checkpoint_every: float = 0.0,
        seal_every: float = 0.0,
        notify: bool,
    ) -> None:
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self.escalate_every = escalate_every
        self.policy = policy
        self.notify = notify
        self.shutdown = False
        self.listener: psycopg.Connection[Any] | None = None
        self.next_sweep = time.monotonic()
        self.seal_every = seal_every
        self.next_seal = time.monotonic()
        self.checkpoint_every = checkpoint_every
        self.next_checkpoint = time.monotonic()
        self.failures = 0

    # -- signals -------------------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Sets a flag and raises nothing: a SystemExit or KeyboardInterrupt seen while an
        # effect runs therefore came from the effect, and is recorded as its failure
        # (queue_app/apply.py), while a real signal stops the loop between decisions.
        if self.shutdown:
            # Second signal: the operator means it. The open transaction, if any, dies with the
            # connection and its decisions stay due.
            os._exit(128 + signum)
        logger.info(
            "stop requested; finishing the decision in hand",
            extra={"signal": signal.Signals(signum).name},
        )
        self.shutdown = True

    # -- loop ----------------------------------------------------------------------------------

    def drain(self) -> None:
        """Apply everything due now, then return."""
        self._sweep_if_due()
        self._seal_if_due()
        self._checkpoint_if_due()
        while not self.shutdown and self._step():
            pass

    def run(self) -> None:
        """Apply decisions until a signal asks to stop."""
        logger.info(
            "apply worker started",
            extra={
                "batch_size": self.batch_size,
                "notify": self.notify,
                "poll_interval": self.poll_interval,
                "max_attempts": self.policy.max_attempts,
                # What the collector runs on (reviewconsole/gc_tuning.py).
                "gc_gen0_threshold": gc.get_threshold()[0],
                "gc_frozen_objects": gc.get_freeze_count(),
            },
        )
        while not self.shutdown:
            try:
                if self.notify and self.listener is None:
                    self.listener = self._listen()
                self._sweep_if_due()
                self._seal_if_due()
                self._checkpoint_if_due()
                worked = self._step()
                if self.failures:
                    logger.info("database reachable again", extra={"failures": self.failures})
                    self.failures = 0
                # Keep going while there is work; then wait for news.
                while worked and not self.shutdown:
                    worked = self._step()
                    # A busy outbox must not hold sealing back: it has its own cadence.
                    self._seal_if_due()
                if not self.shutdown:
                    self._wait()
            except Exception as exc:
                self._recover(exc)
        self._close_listener()
        logger.info("apply worker stopped")

    def _step(self) -> int:
        applied = apply_batch(
            batch_size=self.batch_size, policy=self.policy, should_stop=lambda: self.shutdown
        )
        if self.shutdown:
            return applied
        # Statements built by the batch go out next: their notices, then the database's batch.
        notices = delivery.deliver_notices(batch_size=self.batch_size, policy=self.policy)
        submitted = 0 if self.shutdown else delivery.submit_statements(policy=self.policy)
        # Appeal outcomes last: a reversal's waits for its overturn's statement notice above.
        outcomes = (
            0
            if self.shutdown
            else appeal_delivery.deliver_appeal_notices(
                batch_size=self.batch_size, policy=self.policy
            )
        )
        return applied + notices + submitted + outcomes

    def _sweep_if_due(self) -> None:
        if not self.escalate_every or time.monotonic() < self.next_sweep:
            return
        self.next_sweep = time.monotonic() + self.escalate_every
        services.escalate_abandoned()

    def _seal_if_due(self) -> None:
        if not self.seal_every or time.monotonic() < self.next_seal:
            return
        self.next_seal = time.monotonic() + self.seal_every
        try:
            sealed = chain.seal_all()
        except chain.SealRefused as exc:
            # Effects go on being applied; the log's damage is for a person (doctor UNSEALED,
            # verify_decisions), and every round says it again until it is dealt with.
            logger.error("decisions not sealed", extra={"error": str(exc)})
            return
        if sealed:
            logger.info("decisions sealed", extra={"count": sealed})

    def _checkpoint_if_due(self) -> None:
        if not self.checkpoint_every or time.monotonic() < self.next_checkpoint:
            return
        self.next_checkpoint = time.monotonic() + self.checkpoint_every
        try:
            path = chain_checkpoints.emit()
        except (chain_checkpoints.CheckpointError, EffectError, OSError) as exc:
            # The anchor is late, not lost: the next one covers everything this one would have.
            logger.warning("checkpoint not written", extra={"error": str(exc)})
            return
        logger.info("checkpoint written", extra={"path": str(path)})

    def _wait(self) -> None:
        # Jitter keeps a fleet of idle workers from polling in lockstep.
        timeout = self.poll_interval * random.uniform(0.8, 1.2)
        if self.listener is None:
            self._sleep(timeout)
            return
        end = time.monotonic() + timeout
        # In short slices: a signal does not interrupt psycopg's wait (PEP 475 resumes it), and
        # SIGTERM must not wait out a long poll interval. A slice costs a select(), no query.
        while not self.shutdown and (left := end - time.monotonic()) > 0:
            if any(True for _ in self.listener.notifies(timeout=min(left, 0.25), stop_after=1)):
                break
        # Decisions committed together sent several notifications; one batch serves them all.
        for _ in self.listener.notifies(timeout=0):
            pass

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.shutdown and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))

    # -- connections ---------------------------------------------------------------------------

    def _listen(self) -> psycopg.Connection[Any]:
        name = "review-console-apply-listen"
        if settings.DATABASE_DIRECT_URL:
            # LISTEN belongs to a session: past a pooler in transaction mode it would listen on
            # a server connection lent to others, and hear nothing once it was handed back.
            listener = psycopg.connect(
                settings.DATABASE_DIRECT_URL, application_name=name, autocommit=True
            )
            listener.execute(f"LISTEN {CHANNEL}")
            return listener
        params = connection.get_connection_params()
        # Django's cursor class and adapters are for its own connection; this one only listens.
        for key in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(key, None)
        params["application_name"] = name
        listener = psycopg.connect(**params, autocommit=True)
        listener.execute(f"LISTEN {CHANNEL}")
        return listener

    def _close_listener(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(Exception):  # already broken; nothing to release
                self.listener.close()
            self.listener = None

    def _recover(self, exc: Exception) -> None:
        """Log a failed iteration, drop the connections, and back off before trying again."""
        self.failures += 1
        low, high = RECONNECT_BACKOFF
        delay = min(high, low * 2 ** (self.failures - 1)) * random.uniform(0.5, 1.0)
        error = f"{type(exc).__name__}: {exc}".strip()[:500]
        extra = {"error": error, "failures": self.failures, "retry_in": round(delay, 2)}
        if isinstance(exc, (OperationalError, InterfaceError, psycopg.OperationalError)):
            # The expected failure (a restart, a failover, a network blip): one line, no trace.
            logger.warning(
                "database unavailable; reconnecting in %.1fs: %s", delay, error, extra=extra
            )
        else:
            logger.error("apply loop failed; retrying in %.1fs", delay, extra=extra, exc_info=exc)
        self._close_listener()
        with contextlib.suppress(Exception):  # the socket is gone; Django forgets it anyway
            connection.close()
        self._sleep(delay)
