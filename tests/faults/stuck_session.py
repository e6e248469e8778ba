"""A session that locks queue rows and then goes idle, as a forgotten admin shell would.

Run inside `manage.py shell` with the app's real settings, so the server-side guards it meets
are the ones every app connection carries (DB_IDLE_IN_TRANSACTION_TIMEOUT_MS).
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from django.db import DatabaseError, connection, transaction


def hold() -> None:
    """Lock the rows in STUCK_ITEM_IDS FOR UPDATE, idle until SIGUSR1, then try to go on."""
    go_on = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: go_on.set())
    ids = [int(i) for i in os.environ["STUCK_ITEM_IDS"].split(",")]
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            print(f"pid {cursor.fetchone()[0]}", flush=True)
            cursor.execute(
                "SELECT id FROM queue_app_reviewitem WHERE id = ANY(%s) FOR UPDATE", [ids]
            )
            print(f"locked {cursor.rowcount}", flush=True)
            go_on.wait(float(os.environ.get("STUCK_SECONDS", "600")))
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        print(f"ended by the server: {exc}", flush=True)
        sys.exit(3)
    print("never ended", flush=True)
