"""The export streams: peak memory over 200,000 decisions is that of 20,000, not 10x it.

Each export runs in a fresh process that reports how far its peak resident set size rose during
the export alone, so neither imports nor earlier tests blur the figure. The rows are committed
(transaction=True) so those processes can read them; teardown's flush removes them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from queue_app.models import Decision, ReasonCode

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOTAL = 200_000
BASELINE = 20_000
ROOT = Path(__file__).resolve().parents[2]

# One statement each. Items are inserted already decided; decisions get one timestamp a second
# from 2026-01-01 so a --until bound picks out the first BASELINE of them. The chain trigger
# runs per row, as it would for real inserts.
INSERT_ITEMS = """
INSERT INTO queue_app_reviewitem
       (queue_id, state, priority, created_at, subject, payload, idempotency_key, source_hash,
        trace_id, lease_count, decided_at)
SELECT %(queue_id)s, 'decided', 0, now(), 'Applicant ' || n,
       jsonb_build_object('n', n, 'amount', 12.50), 'bulk-' || n, '', gen_random_uuid(), 1, now()
  FROM generate_series(1, %(total)s) AS n
"""
INSERT_DECISIONS = """
INSERT INTO queue_app_decision
       (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
        created_at, chain_hash)
SELECT i.id, i.queue_id, %(reviewer_id)s, 'approve', %(reason_id)s,
       encode(sha256(convert_to(i.subject, 'UTF8')), 'hex'), 'bulk',
       timestamptz '2026-01-01 00:00:00+00'
         + make_interval(secs => row_number() OVER (ORDER BY i.id)),
       ''
  FROM queue_app_reviewitem AS i
 WHERE i.idempotency_key LIKE 'bulk-%%'
"""
# 20,000 seconds after midnight: exactly the first BASELINE decisions are before it.
BASELINE_UNTIL = "2026-01-01T05:33:21Z"

# Run the command against this test's database and print how far its resident set rose above
# where it stood once Django was loaded (kB). Writing 5 to clear_refs resets the kernel's
# high-water mark (VmHWM), so imports and connection setup do not count.
CHILD = """
import os, sys
import django
django.setup()
from django.db import connections
connections["default"].settings_dict["NAME"] = sys.argv[1]
connections["default"].ensure_connection()
from django.core.management import call_command

def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
start = status("VmRSS")
call_command("export_decisions", *sys.argv[2:], "--output", os.devnull)
print(status("VmHWM") - start)
"""


def _peak_growth_kb_of_export(*args: str) -> int:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reviewconsole.settings"}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, connection.settings_dict["NAME"], *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return int(result.stdout.split()[-1])


def test_export_memory_stays_flat_over_200k_decisions(queue, alice, capsys):
    reason = ReasonCode.objects.get(queue=queue, verdict="approve", code="verified")
    with connection.cursor() as cursor:
        cursor.execute(INSERT_ITEMS, {"queue_id": queue.pk, "total": TOTAL})
        # This connection may hold foreign-key check plans made while the items table was
        # empty (a sequential scan); run per decision over 200k items, that is quadratic.
        # ANALYZE invalidates them, so the checks are planned again as index lookups.
        cursor.execute("ANALYZE queue_app_reviewitem")
        cursor.execute(INSERT_DECISIONS, {"reviewer_id": alice.pk, "reason_id": reason.pk})
    assert Decision.objects.count() == TOTAL
    assert Decision.objects.filter(created_at__lt=BASELINE_UNTIL).count() == BASELINE

    empty = _peak_growth_kb_of_export("--since", "2999-01-01")
    small = _peak_growth_kb_of_export("--until", BASELINE_UNTIL, "--format", "jsonl")
    large = _peak_growth_kb_of_export("--format", "jsonl")
    large_csv = _peak_growth_kb_of_export("--format", "csv")
    with capsys.disabled():
        print(
            f"\nexport peak RSS growth: 0 rows {empty / 1024:.1f} MB, {BASELINE:,} rows "
            f"{small / 1024:.1f} MB, {TOTAL:,} rows {large / 1024:.1f} MB (jsonl), "
            f"{large_csv / 1024:.1f} MB (csv)"
        )
    # Holding 200k rows of 16 values would add a few hundred MB (each row is well over 1 kB as
    # Python objects); streaming holds one chunk whatever the total. Ten times the rows may
    # cost allocator noise, not memory proportional to the rows.
    for peak in (large, large_csv):
        assert peak < 2 * small + 8 * 1024
