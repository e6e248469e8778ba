"""The soak script in miniature: one minute of mixed traffic with faults, invariants held."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.common import RESULTS, ROOT

pytestmark = pytest.mark.slow


def test_a_one_minute_soak_loses_nothing_and_stays_flat():
    done = subprocess.run(
        [
            sys.executable,
            "bench/soak.py",
            "--minutes",
            "1",
            "--reviewers",
            "2",
            "--api-clients",
            "1",
            "--stock",
            "300",
            "--sample-every",
            "2",
            "--fault-every",
            "6",
            "--results",
            "soak-smoke",
        ],
        cwd=ROOT,
        env={**os.environ, "LOG_LEVEL": "WARNING"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads((RESULTS / "soak-smoke.json").read_text())

    assert figures["decisions"] > 50
    assert figures["faults_injected"] >= 6
    assert figures["faults"]["stuck_sessions_ended_by_server"] >= 1
    assert figures["faults"].get("stuck_sessions_not_ended", 0) == 0
    assert figures["responses_5xx"] == 0, figures["bad_samples"]
    assert figures["transport_errors"] == 0, figures["bad_samples"]
    assert figures["decisions_lost"] == 0
    assert figures["decisions_applied_twice"] == 0
    outcome = figures["outcome"]
    assert outcome["effects_applied"] == outcome["decisions"] == figures["decisions"]
    assert {k: v for k, v in outcome.items() if v} == {
        "decisions": figures["decisions"],
        "effects_applied": figures["decisions"],
    }
    assert figures["outbox_drained"] and figures["worker_exit_status"] == 0
    assert figures["memory"]["web"]["flat"], figures["memory"]
    assert figures["memory"]["worker"]["flat"], figures["memory"]
    assert figures["connections"]["stable"], figures["connections"]
