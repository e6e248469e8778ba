"""The benchmark scripts keep working: each runs in smoke mode (tiny sizes, seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.parametrize("script", ["claims.py"])
def test_bench_script_runs_in_smoke_mode(script):
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--smoke"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    written = ROOT / "bench" / "results" / f"{script.removesuffix('.py')}-smoke.json"
    results = json.loads(written.read_text())
    assert results["smoke"] is True
    assert results["machine"]["postgresql"]
