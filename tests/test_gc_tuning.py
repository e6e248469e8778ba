"""The collector settings of the long-running processes (reviewconsole/gc_tuning.py).

Each case runs in a fresh interpreter: freezing and thresholds are per process, and this one
(pytest's) keeps Python's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[1]

# What gunicorn does in each worker: import the WSGI module. Then say what the collector runs on.
LOAD_LIKE_A_WORKER = """
import gc, json
import reviewconsole.wsgi
print(json.dumps({"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}))
"""

# After tuning, garbage in reference cycles still goes without anyone calling gc.collect(). The
# collector counts objects allocated and not yet freed; each cycle left behind adds a few, so
# 20,000 of them fill the young generation several times over.
CYCLES_STILL_COLLECTED = """
import gc, json, weakref
import reviewconsole.wsgi

class Node:
    pass

collected = []
for i in range(20_000):
    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: reference counting alone never frees it
    weakref.finalize(a, collected.append, i)
    del a, b
print(json.dumps({"collected": len(collected), "threshold": gc.get_threshold()}))
"""


def _run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "GC_GEN0_THRESHOLD"}
    environment.update(
        DJANGO_SETTINGS_MODULE="reviewconsole.settings",
        SECRET_KEY="test-only-key-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _json(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_web_worker_freezes_what_it_loaded_and_enlarges_the_young_generation():
    state = _json(_run(LOAD_LIKE_A_WORKER))
    assert state["threshold"][0] == 20_000
    assert state["threshold"][1:] == [10, 10]  # the older generations keep Python's ratios
    # Django, the apps, the URLconf: tens of thousands of objects no scan will walk again.
    assert state["frozen"] > 10_000


def test_the_threshold_comes_from_the_environment():
    state = _json(_run(LOAD_LIKE_A_WORKER, GC_GEN0_THRESHOLD="5000"))
    assert state["threshold"][0] == 5_000
    assert state["frozen"] > 10_000


def test_zero_keeps_pythons_own_collector():
    import gc

    state = _json(_run(LOAD_LIKE_A_WORKER, GC_GEN0_THRESHOLD="0"))
    assert state["threshold"] == list(gc.get_threshold()) == [700, 10, 10]
    assert state["frozen"] == 0


def test_the_test_run_itself_keeps_pythons_collector():
    # Nothing the suite imports sets this process up as a worker (tests/api/test_schema.py
    # takes Django's WSGI handler, not reviewconsole.wsgi): tests see the interpreter as is.
    import gc

    assert gc.get_threshold()[0] == 700
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("value", ["-1", "lots", "1.5"])
def test_a_bad_threshold_stops_the_worker_with_words(value):
    done = _run(LOAD_LIKE_A_WORKER, GC_GEN0_THRESHOLD=value)
    assert done.returncode != 0
    assert "ImproperlyConfigured: GC_GEN0_THRESHOLD must be a whole number" in done.stderr


def test_garbage_in_cycles_is_still_collected():
    state = _json(_run(CYCLES_STILL_COLLECTED))
    assert state["threshold"][0] == 20_000
    # Each young collection freed the cycles made since the last; those made after the last
    # one wait for the next.
    assert state["collected"] > 10_000
