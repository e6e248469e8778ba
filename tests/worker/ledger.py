"""A test-only effect handler: one ledger row per call, in the applying transaction.

The ledger table has no unique constraint on purpose: if a decision were ever applied twice,
the second row would be there to count. Environment knobs let the process tests widen the
window a kill can land in (LEDGER_MAX_SLEEP random, LEDGER_SLEEP fixed) and see which
decision is in hand (LEDGER_MARKERS).
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

from django.db import connection

from queue_app.models import Decision

LEDGER_TABLE = "worker_test_ledger"


def record(decision: Decision) -> dict[str, Any]:
    """Write a ledger row for the decision, then linger as configured."""
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {LEDGER_TABLE} (decision_id) VALUES (%s)", [decision.pk])
    markers = os.environ.get("LEDGER_MARKERS")
    if markers:
        (Path(markers) / f"started-{decision.pk}").touch()
    max_sleep = float(os.environ.get("LEDGER_MAX_SLEEP", "0"))
    if max_sleep:
        time.sleep(random.uniform(0, max_sleep))
    time.sleep(float(os.environ.get("LEDGER_SLEEP", "0")))
    return {"ledger": True}


def failing(decision: Decision) -> None:
    """Write a ledger row, then fail: the row must roll back with the attempt."""
    record(decision)
    raise RuntimeError(f"ledger unavailable for decision {decision.pk}")


# In-process concurrency tests: the thread named "holder" stops inside its first decision
# (its transaction and row locks open) until the test opens the gate.
HOLDER_INSIDE = threading.Event()
HOLDER_GATE = threading.Event()


def gated(decision: Decision) -> dict[str, Any]:
    """Record the decision; in the "holder" thread, first wait for the gate to open."""
    if threading.current_thread().name == "holder":
        HOLDER_INSIDE.set()
        if not HOLDER_GATE.wait(60):
            raise TimeoutError("the test never opened the gate")
    return record(decision)


# Decisions whose first attempt has failed already (flaky fails each decision once).
FAILED_ONCE: set[int] = set()


def flaky(decision: Decision) -> dict[str, Any]:
    """Fail a decision's first attempt (a receiver outage), then record it like record."""
    if decision.pk not in FAILED_ONCE:
        FAILED_ONCE.add(decision.pk)
        raise RuntimeError(f"receiver down for decision {decision.pk}")
    return record(decision)


def exits(decision: Decision) -> None:
    """Raise SystemExit from inside the handler, as sys.exit in an effect would."""
    record(decision)
    raise SystemExit(3)


def interrupts(decision: Decision) -> None:
    """Raise KeyboardInterrupt from inside the handler (not a signal to the worker)."""
    raise KeyboardInterrupt


def calls() -> list[int]:
    """Return the decisions the ledger effect ran for, in the order the handler ran."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT decision_id FROM {LEDGER_TABLE} ORDER BY id")
        return [row[0] for row in cursor.fetchall()]
