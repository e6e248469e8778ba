"""Wait for the benchmark server to settle before the next scenario starts.

A scenario that loads millions of rows (B2: 5,000,000) leaves the server with work of its own
for a while afterwards: dirty buffers for the next checkpoint to write and, on any table the
scenario did not vacuum itself, autovacuum. The next scenario would share the two cores with
it (B3 measured 0.37 / 0.35 at 8 / 32 processes inside run_all against 0.44 / 0.33 run
alone). This waits until no autovacuum worker runs on the server (at most --timeout seconds),
then checkpoints, so the next scenario starts on a quiet server.

    .venv/bin/python bench/settle.py [--timeout 600]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import admin_connection

AUTOVACUUM_RUNNING = (
    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"
)


def settle(timeout: float) -> tuple[float, int]:
    """Return (seconds waited, autovacuum workers still running when the wait ended)."""
    start = time.monotonic()
    with admin_connection() as conn:
        while True:
            running = conn.execute(AUTOVACUUM_RUNNING).fetchone()[0]
            if not running or time.monotonic() - start >= timeout:
                break
            time.sleep(2)
        conn.execute("CHECKPOINT")
    return time.monotonic() - start, running


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    waited, running = settle(args.timeout)
    note = f", {running} autovacuum worker(s) still running" if running else ""
    print(f"   settled after {waited:.0f} s{note}", flush=True)


if __name__ == "__main__":
    main()
