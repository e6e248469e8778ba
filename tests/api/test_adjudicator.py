"""examples/adjudicator.py end to end: a real process against the live server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from queue_app.models import Decision, ReviewItem
from queue_app.services import create_item
from tests.api.conftest import make_client
from tests.conftest import make_queue

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "adjudicator.py"


def reconciliation_items(queue) -> dict[str, list[int]]:
    """Items the rule approves, and items it must leave for people."""
    cases = {
        "approve": [
            {"match_decision": "MATCHED", "variance_amount": Decimal("0.00")},
            {"match_decision": "MATCHED", "variance_amount": 0},
            {"match_decision": "MATCHED", "variance_amount": Decimal("-0.000")},
        ],
        "leave": [
            {"match_decision": "MATCHED", "variance_amount": Decimal("0.01")},
            {"match_decision": "MATCHED", "variance_amount": Decimal("1E-30")},
            {"match_decision": "PARTIAL", "variance_amount": Decimal("0.00")},
            {"match_decision": "UNMATCHED", "variance_amount": 0},
            {"match_decision": "MATCHED"},
            {"match_decision": "MATCHED", "variance_amount": "zero"},
        ],
    }
    ids: dict[str, list[int]] = {"approve": [], "leave": []}
    n = 0
    for kind, payloads in cases.items():
        for payload in payloads:
            n += 1
            item, _ = create_item(
                queue=queue,
                subject=f"recon {n}",
                payload={"ledger_entity": "ACME", **payload},
                idempotency_key=f"recon-{n}",
                source_hash=f"h{n}",
            )
            ids[kind].append(item.pk)
    return ids


def run_adjudicator(live_server, token: str, *args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "REVIEW_API_TOKEN": token}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), "--base-url", live_server.url, "--queue", "recon", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def test_it_approves_matched_zero_variance_items_and_releases_the_rest(live_server):
    queue = make_queue("recon")
    ids = reconciliation_items(queue)
    client, token = make_client("reconciler", [queue], intake=False)

    # Batches of 2 force several leases per pass, with undecidable items held in between.
    proc = run_adjudicator(live_server, token, "--until-empty", "--batch-size", "2")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err

    decided = Decision.objects.filter(item_id__in=ids["approve"])
    assert sorted(decided.values_list("item_id", flat=True)) == sorted(ids["approve"])
    assert set(decided.values_list("verdict", "reason_code__code")) == {
        ("approve", "within_tolerance")
    }
    assert {d.reviewer_id for d in decided} == {client.user_id}
    left = ReviewItem.objects.filter(pk__in=ids["leave"])
    assert set(left.values_list("state", flat=True)) == {"pending"}
    # Held until the pass ended, so each undecidable item was leased exactly once.
    assert set(left.values_list("lease_count", flat=True)) == {1}
    assert Decision.objects.count() == len(ids["approve"])
    assert '"approved": 3' in out and '"released": 6' in out


def test_it_polls_an_empty_queue_picks_up_new_work_and_stops_when_asked(live_server):
    queue = make_queue("recon")
    _, token = make_client("reconciler", [queue], intake=False)
    proc = run_adjudicator(live_server, token, "--poll-min", "0.05", "--poll-max", "0.2")
    try:
        ids = reconciliation_items(queue)
        # Wait (bounded) for the worker to find the work; no assertion on how long it took.
        for _ in range(600):
            if Decision.objects.count() == len(ids["approve"]):
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert sorted(Decision.objects.values_list("item_id", flat=True)) == sorted(ids["approve"])
    # Nothing is left leased to the worker after it stopped.
    assert not ReviewItem.objects.filter(state="leased").exists()
    assert '"approved": 3' in out


def test_it_refuses_to_start_without_a_token():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--queue", "recon"],
        env={k: v for k, v in os.environ.items() if k != "REVIEW_API_TOKEN"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "API token is required" in proc.stderr
