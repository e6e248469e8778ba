"""Many API workers at once: disjoint leases, every item decided exactly once, one intake."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from queue_app.evidence import evidence_hash
from queue_app.models import Decision, ReviewItem
from tests.api.conftest import caller_for, make_client
from tests.conftest import run_in_threads

pytestmark = pytest.mark.django_db(transaction=True)

WORKERS = 20
BATCH = 50
ITEMS = 5_000


def bulk_items(queue, n: int) -> None:
    """Insert n pending items in one statement (5,000 create_item calls would dominate the test)."""
    ReviewItem.objects.bulk_create(
        ReviewItem(
            queue=queue,
            subject=f"bulk {i}",
            payload={"n": i, "amount": "12.50"},
            idempotency_key=f"bulk-{i}",
            source_hash=f"h{i}",
            trace_id=uuid.uuid4(),
            # As intake stores it: the decide compares the posted hash with it.
            evidence_hash=evidence_hash(subject=f"bulk {i}", payload={"n": i, "amount": "12.50"}),
        )
        for i in range(n)
    )


@pytest.mark.slow
def test_twenty_api_workers_lease_disjoint_batches_and_decide_every_item_once(queue):
    bulk_items(queue, ITEMS)
    clients = [make_client(f"worker-{i}", [queue]) for i in range(WORKERS)]

    def work(i: int) -> dict[str, list]:
        caller = caller_for(clients[i][1])
        leased: list[int] = []
        statuses: list[int] = []
        while True:
            reply = caller.post("/queues/kyc/leases", {"batch_size": BATCH, "lease_seconds": 120})
            assert reply.status == 200, reply.body
            batch = reply.body["items"]
            if not batch:
                return {"leased": leased, "statuses": statuses}
            for entry in batch:
                leased.append(entry["id"])
                decided = caller.post(
                    f"/items/{entry['id']}/decision",
                    {
                        "lease_token": entry["lease_token"],
                        "verdict": "approve",
                        "reason_code": "verified",
                        "evidence_hash": entry["evidence_hash"],
                    },
                )
                statuses.append(decided.status)

    results = run_in_threads(WORKERS, work)

    every_lease = Counter(item_id for r in results for item_id in r["leased"])
    assert len(every_lease) == ITEMS
    assert set(every_lease.values()) == {1}  # no item was ever in two batches
    assert Counter(s for r in results for s in r["statuses"]) == {201: ITEMS}
    assert Decision.objects.count() == ITEMS
    assert Decision.objects.values("item_id").distinct().count() == ITEMS
    assert not ReviewItem.objects.exclude(state="decided").exists()
    # Each decision is owned by the worker that leased the item.
    leased_by = {item_id: i for i, r in enumerate(results) for item_id in r["leased"]}
    user_of = {client.user_id: i for i, (client, _) in enumerate(clients)}
    for item_id, reviewer_id in Decision.objects.values_list("item_id", "reviewer_id"):
        assert user_of[reviewer_id] == leased_by[item_id]
    # More than one worker got work: the batches really were taken concurrently.
    assert sum(1 for r in results if r["leased"]) > 1


def test_the_same_completion_posted_twice_at_once_records_one_decision(queue):
    from tests.conftest import make_items

    make_items(queue, 1)
    _, token = make_client("worker", [queue])
    entry = caller_for(token).post("/queues/kyc/leases", {"batch_size": 1}).body["items"][0]
    body = {
        "lease_token": entry["lease_token"],
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": entry["evidence_hash"],
    }

    def post(i: int) -> tuple[int, int]:
        reply = caller_for(token).post(f"/items/{entry['id']}/decision", body)
        return reply.status, reply.body["id"]

    results = run_in_threads(4, post)
    # The losers of the fence race wait for the winner's commit, then recognise its decision.
    assert sorted(status for status, _ in results) == [200, 200, 200, 201]
    assert len({decision_id for _, decision_id in results}) == 1
    assert Decision.objects.count() == 1
