"""Carry decisions out exactly once: the services behind ``manage.py run_apply_worker``.

One batch is one transaction. It claims due effect jobs with FOR UPDATE SKIP LOCKED (the row
locks are the claim: other workers walk past them, and a worker that dies releases them with
its connection). Each decision then runs in its own savepoint:

    insert AppliedDecision ON CONFLICT DO NOTHING RETURNING
    -> only if a row came back, and it says the decision still stands, build its statement of
       reasons (if its queue's decisions restrict someone) and run the effect handler
    -> mark the job done

so the proof, the effect's database writes and the done mark commit together or not at all.
A handler that raises (anything: SystemExit and KeyboardInterrupt from an effect included)
rolls back its own savepoint only; the failure (attempts + 1, the error, the next attempt after
exponential backoff with jitter, or dead past the maximum) is recorded in the batch and the
rest of the batch carries on. A crash anywhere rolls back the uncommitted batch, whose jobs are
then due again: applied once, never twice.

Per item, effects run in decision order: the claim never hands out a job while an earlier job
of its item is not done (outbox_sql.CLAIM_DUE_EFFECT_JOBS), and a decision an overturn has replaced
before its turn is recorded as superseded without running its handler (the receiver must end
on the verdict that stands). A dead job therefore holds back its item's later effects until an
operator retries it.

With batch_size=1 this is one transaction per decision. Larger batches share one commit (the
throughput figures in bench/quick_apply.py); a time budget ends a batch early so slow handlers
(webhooks) never hold a transaction open for long.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import connection, transaction

from queue_app import effects
from queue_app.db.runner import fetch_dicts, fetch_prepared
from queue_app.db.statements import outbox as outbox_sql
from queue_app.errors import EffectAborted, EffectError, InvalidBounds, PermanentEffectError
from queue_app.jsonutil import exact_dumps
from queue_app.models import AppliedStatus, Decision
from queue_app.services import statements

logger = logging.getLogger("queue_app.apply")

BATCH_SIZE_RANGE = (1, 500)
MAX_ATTEMPTS_RANGE = (1, 100)
ERROR_MAX_LENGTH = 2000


@dataclass(frozen=True)
class RetryPolicy:
    """How failed effects are retried: up to max_attempts, waiting base * 2^n (jittered)."""

    max_attempts: int = 10
    backoff_base: float = 2.0
    backoff_cap: float = 3600.0

    def __post_init__(self) -> None:
        low, high = MAX_ATTEMPTS_RANGE
        if not low <= self.max_attempts <= high:
            raise InvalidBounds(f"max attempts must be between {low} and {high}")
        if not 0 < self.backoff_base <= self.backoff_cap:
            raise InvalidBounds("backoff base must be positive and at most the cap")

    def delay(self, failures: int) -> timedelta:
        """Return the wait after the n-th failure: exponential, with jitter in [50%, 100%]."""
        # Jitter spreads out jobs that failed together (a receiver outage), so they do not all
        # come back at once; keeping at least half the step keeps the delays growing.
        ceiling = min(self.backoff_cap, self.backoff_base * 2 ** max(failures - 1, 0))
        return timedelta(seconds=ceiling * random.uniform(0.5, 1.0))


def apply_batch(
    *,
    batch_size: int = 10,
    policy: RetryPolicy | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    time_budget: float = 5.0,
) -> int:
    """Apply up to batch_size due decisions in one transaction; return how many were attempted."""
    low, high = BATCH_SIZE_RANGE
    if not low <= batch_size <= high:
        raise InvalidBounds(f"batch size must be between {low} and {high}")
    policy = policy or RetryPolicy()
    deadline = time.monotonic() + time_budget
    attempted = 0
    with transaction.atomic():
        # Prepared (planned once per connection): planning the claim cost several times
        # what running it does, once per batch (B5: bench/profile_apply.py).
        jobs = fetch_prepared(outbox_sql.CLAIM_DUE_EFFECT_JOBS, {"limit": batch_size})
        if not jobs:
            return 0
        # The queue's statement policy with it (NULL for most queues): no query per decision
        # to learn that it needs no statement of reasons.
        decisions = Decision.objects.select_related(
            "item", "queue", "queue__escalation_queue", "queue__statement_policy", "reason_code"
        ).in_bulk([job["decision_id"] for job in jobs])
        for job in jobs:
            # Jobs not reached stay due: their locks go with this transaction's commit and the
            # next batch (ours or another worker's) takes them.
            if should_stop() or (attempted and time.monotonic() > deadline):
                break
            decision = decisions[job["decision_id"]]
            decision.item_sequence = job["item_sequence"]
            logger.info("effect job claimed", extra=_log_fields(decision, attempts=job["attempts"]))
            _apply_one_in_batch(decision, attempts=job["attempts"], policy=policy)
            attempted += 1
    return attempted


def apply_one(*, policy: RetryPolicy | None = None) -> bool:
    """Apply the next due decision in its own transaction; return whether there was one."""
    return apply_batch(batch_size=1, policy=policy) == 1


def _apply_one_in_batch(decision: Decision, *, attempts: int, policy: RetryPolicy) -> bool:
    effect = effects.effect_name(decision)
    fields = _log_fields(decision, effect=effect)
    try:
        with transaction.atomic():
            first = fetch_prepared(
                outbox_sql.INSERT_APPLIED_DECISION,
                {
                    "decision_id": decision.pk,
                    # What was carried out, fixed before the handler runs: the row is
                    # append-only, so nothing the handler returns can be added afterwards.
                    "outcome": exact_dumps(
                        {"effect": effect, "standing_verdict": decision.standing_verdict}
                    ),
                },
            )
            if not first:
                # An earlier attempt applied it but its done mark is missing. Finish the
                # bookkeeping, never the effect.
                result: dict[str, Any] | None = {"already_applied": True}
            elif first[0]["status"] == AppliedStatus.SUPERSEDED:
                # Overturned before its turn came: running it now would leave a receiver on a
                # verdict that no longer stands. The overturn's own job carries it out next.
                result = {"superseded": True}
            else:
                # The statement of reasons commits with the applied mark, so it is built once
                # per final decision whatever happens to this worker (services/statements.py).
                statements.record_statement(decision=decision)
                result = _run_effect(effect, decision)
            fetch_prepared(outbox_sql.MARK_EFFECT_JOB_DONE, {"decision_id": decision.pk})
    except Exception as exc:
        if connection.needs_rollback or not connection.is_usable():
            # The savepoint could not be rolled back (the connection is gone): the whole batch
            # is lost and will be retried; the caller reconnects.
            raise
        _record_failure(decision, exc, failures=attempts + 1, policy=policy, fields=fields)
        return False
    # Logged once the batch commits: a crash before then rolls the apply back, and the log
    # must not claim otherwise. (A callback from a rolled-back savepoint is discarded.)
    message = (
        "decision superseded before its effect ran; effect not run"
        if result == {"superseded": True}
        else "decision applied"
    )
    transaction.on_commit(partial(logger.info, message, extra={**fields, **_scalar(result or {})}))
    return True


def _run_effect(effect: str, decision: Decision) -> dict[str, Any] | None:
    """Resolve and call an effect handler, turning whatever it raises into an Exception."""
    try:
        # Resolving is inside: importing a registered module runs its code too.
        return effects.resolve(effect)(decision)
    except Exception:
        raise
    except BaseException as exc:
        # SystemExit, KeyboardInterrupt, GeneratorExit... raised BY THE EFFECT: a failure of
        # this job, not a request to stop the worker. Real SIGTERM/SIGINT never arrive this
        # way: the worker's signal handlers set a flag and raise nothing (run_apply_worker).
        raise EffectAborted(
            f"The effect raised {type(exc).__name__}({exc!s}); the worker carried on."
        ) from exc


def _record_failure(
    decision: Decision,
    exc: Exception,
    *,
    failures: int,
    policy: RetryPolicy,
    fields: dict[str, Any],
) -> None:
    permanent = isinstance(exc, PermanentEffectError)
    error = f"{type(exc).__name__}: {exc}"[:ERROR_MAX_LENGTH]
    rows = fetch_dicts(
        outbox_sql.RECORD_EFFECT_JOB_FAILURE,
        {
            "decision_id": decision.pk,
            "error": error,
            "permanent": permanent,
            "max_attempts": policy.max_attempts,
            "delay": policy.delay(failures),
        },
    )
    row = rows[0]
    extra = {**fields, "attempts": row["attempts"], "error": error}
    # An EffectError says what went wrong in words; anything else is a bug in a handler, and
    # its traceback is what the person fixing it needs.
    # An effect that raised SystemExit or the like is a bug too: keep the traceback.
    exc_info = exc if isinstance(exc, EffectAborted) or not isinstance(exc, EffectError) else None
    if row["dead"]:
        log = partial(logger.error, "effect job dead; an operator must retry it")
    else:
        extra["next_attempt_at"] = row["next_attempt_at"].isoformat()
        log = partial(logger.warning, "effect failed; will retry")
    transaction.on_commit(partial(log, extra=extra, exc_info=exc_info))


def _log_fields(decision: Decision, **more: Any) -> dict[str, Any]:
    return {
        "decision_id": decision.pk,
        "item_id": decision.item_id,
        "queue": decision.queue.slug,
        "trace_id": str(decision.item.trace_id),
        "verdict": decision.verdict,
        **more,
    }


def _scalar(result: dict[str, Any]) -> dict[str, Any]:
    # Log records cannot take arbitrary objects, and must not clobber LogRecord attributes.
    return {
        f"effect_{key}": value
        for key, value in result.items()
        if isinstance(value, (str, int, float, bool))
    }
