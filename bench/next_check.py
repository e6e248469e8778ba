"""B9: Next check's claim latency against the size of the Checks lane.

The lane's claim (lanes_sql.CLAIM_LANE_TASK) walks the partial index lanetask_open_due_claim
(queue, kind, due_at, created_at, id) WHERE state = 'open'. Its cost should not grow with the
number of waiting checks (it takes the earliest deadline, then the oldest) nor with finished
ones (not in the index). Half the loaded items have a deadline, spread over four days. Measured:

- the lane holding 1 waiting check (the smallest lane a claim can take from) and then 100,000,
  with 16 live leases at its head (16 checkers at work, which every claim walks past);
- the same with 100,000 finished checks added (history);
- an empty lane (nothing to claim).

claim_lane_task through the service layer and the claim statement alone; each claim runs in
a transaction rolled back, so every sample sees the same data. Also prints the statements and
round trips of one check cycle (Next check, then Confirm), counted with CaptureQueriesContext.

    .venv/bin/python bench/next_check.py            # full run (a few minutes)
    .venv/bin/python bench/next_check.py --smoke    # tiny sizes, seconds
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    bench_database,
    machine,
    percentiles,
    scratch_database,
    time_calls,
    write_results,
)

SUBJECT = "Bench check"


CHUNK = 5_000


def load_checks(queue_id: int, maker_id: int, reason_id: int, n: int, *, state: str) -> None:
    """n items awaiting (or past) their check, in statements of CHUNK rows each."""
    for start in range(0, n, CHUNK):
        _load_chunk(queue_id, maker_id, reason_id, min(CHUNK, n - start), state=state)
    from django.db import connection

    with connection.cursor() as c:
        c.execute("VACUUM ANALYZE queue_app_lanetask")
        c.execute("VACUUM ANALYZE queue_app_reviewitem")


def _load_chunk(queue_id: int, maker_id: int, reason_id: int, n: int, *, state: str) -> None:
    """n items awaiting (or past) their check, each with the maker's decision and its task."""
    from django.db import connection

    from queue_app.evidence import evidence_hash

    done = state == "done"
    with connection.cursor() as c:
        c.execute(
            """
            WITH items AS (
                INSERT INTO queue_app_reviewitem
                       (queue_id, intake_queue_id, state, priority, created_at, subject, payload,
                        idempotency_key, source_hash, trace_id, lease_count, decided_at, due_at)
                SELECT %(q)s, %(q)s, %(item_state)s, 0, clock_timestamp(), %(subject)s, '{}',
                       'bench-' || g || '-' || gen_random_uuid(), '', gen_random_uuid(), 1, now(),
                       CASE WHEN g %% 2 = 0 THEN now() + (g %% 97) * interval '1 hour' END
                  FROM generate_series(1, %(n)s) AS g
             RETURNING id, queue_id, due_at
            ), decisions AS (
                INSERT INTO queue_app_decision
                       (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash,
                        note, created_at, chain_hash, lease_token)
                SELECT id, queue_id, %(maker)s, 'approve', %(reason)s, %(hash)s, '', now(), '',
                       gen_random_uuid()
                  FROM items
             RETURNING id, item_id, queue_id, reviewer_id
            )
            INSERT INTO queue_app_lanetask
                   (kind, queue_id, item_id, decision_id, maker_id, state, lease_count,
                    due_at, created_at, done_at, lease_owner_id, lease_token, lease_expires)
            SELECT 'check', d.queue_id, d.item_id, d.id, d.reviewer_id, %(state)s, 0,
                   i.due_at, clock_timestamp(), CASE WHEN %(done)s THEN now() END,
                   CASE WHEN %(done)s THEN %(checker)s END,
                   CASE WHEN %(done)s THEN gen_random_uuid() END,
                   CASE WHEN %(done)s THEN now() END
              FROM decisions AS d JOIN items AS i ON i.id = d.item_id
            """,
            {
                "q": queue_id,
                "item_state": "decided" if done else "awaiting_check",
                "subject": SUBJECT,
                "n": n,
                "maker": maker_id,
                "reason": reason_id,
                "hash": evidence_hash(subject=SUBJECT, payload={}),
                "state": state,
                "done": done,
                "checker": maker_id + 1,
            },
        )


def lease_head(queue_id: int, holder_ids: list[int]) -> None:
    """Give the first open checks in claim order live leases, as if checkers were at work."""
    from django.db import connection

    with connection.cursor() as c:
        for holder in holder_ids:
            c.execute(
                """
                UPDATE queue_app_lanetask SET lease_owner_id = %s, lease_token = gen_random_uuid(),
                       lease_expires = now() + interval '1 hour'
                 WHERE id = (SELECT id FROM queue_app_lanetask
                              WHERE queue_id = %s AND state = 'open' AND lease_owner_id IS NULL
                              ORDER BY due_at, created_at, id LIMIT 1)
                """,
                [holder, queue_id],
            )


def measure(queue, checker, n: int, *, expect: bool = True) -> dict[str, dict[str, float]]:
    from datetime import timedelta

    from django.db import connection, transaction

    from queue_app.db.statements import lanes as lanes_sql
    from queue_app.services import claim_lane_task

    def service() -> None:
        with transaction.atomic():
            got = claim_lane_task(queue=queue, kind="check", user=checker)
            assert (got is not None) == expect
            transaction.set_rollback(True)

    params = {
        "queue_id": queue.pk,
        "kind": "check",
        "owner_id": checker.pk,
        "ttl": timedelta(minutes=10),
    }

    def statement() -> None:
        with transaction.atomic(), connection.cursor() as c:
            c.execute(lanes_sql.CLAIM_LANE_TASK, params)
            assert (c.fetchone() is not None) == expect
            transaction.set_rollback(True)

    out: dict[str, list[float]] = {"service": [], "statement": []}
    rounds = 5
    for _ in range(rounds):
        out["service"] += time_calls(service, n // rounds, warmup=5)
        out["statement"] += time_calls(statement, n // rounds, warmup=5)
    return {name: percentiles(samples) for name, samples in out.items()}


def statements_per_cycle(queue, checker) -> dict[str, object]:
    """Statements of one Next check + Confirm (committed), as the server sees them."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    from queue_app.services import claim_lane_task, confirm_check

    reset_queries()  # the query log is a bounded deque: past its limit the counts read 0
    with CaptureQueriesContext(connection) as claim:
        task = claim_lane_task(queue=queue, kind="check", user=checker)
    with CaptureQueriesContext(connection) as confirm:
        # The task's queue, as the console passes it (it has loaded the task to show it).
        confirm_check(
            task_id=task.pk, queue_id=task.queue_id, user=checker, lease_token=task.lease_token
        )
    names = [" ".join(q["sql"].split()[:2]) for q in claim.captured_queries]
    names += [" ".join(q["sql"].split()[:2]) for q in confirm.captured_queries]
    return {
        "claim": len(claim.captured_queries),
        "confirm": len(confirm.captured_queries),
        "statements": names,
        # Pipelined (runner.run_together): the timeouts travel with the claim and with the
        # locking read, and the COMMIT with the last statement.
        "round_trips": 5,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes")
    parser.add_argument("--samples", type=int, default=None)
    args = parser.parse_args()
    big, samples = (2_000, 50) if args.smoke else (100_000, 500)
    samples = args.samples or samples

    scratch_database(bench_database("rc_bench_next_check", smoke=args.smoke))
    from django.contrib.auth.models import Group, User

    from queue_app.models import Queue, ReasonCode

    group = Group.objects.create(name="bench checkers")
    queue = Queue.objects.create(slug="bench", name="Bench")
    queue.reviewer_groups.add(group)
    reason = ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="OK")
    maker = User.objects.create_user("bench-maker")
    User.objects.create_user("bench-finisher")  # maker.pk + 1: finished the done checks
    checker = User.objects.create_user("bench-checker")
    holders = [User.objects.create_user(f"bench-holder-{i}") for i in range(16)]
    for user in [checker, *holders]:
        user.groups.add(group)

    results: dict = {"machine": machine(), "smoke": args.smoke, "samples": samples}
    levels: dict[str, dict] = {}

    levels["empty"] = measure(queue, checker, samples, expect=False)
    print(f"empty lane: {levels['empty']}", flush=True)
    load_checks(queue.pk, maker.pk, reason.pk, 1 + len(holders), state="open")
    lease_head(queue.pk, [h.pk for h in holders])
    levels["1"] = measure(queue, checker, samples)
    print(f"1 waiting (+16 leased): {levels['1']}", flush=True)
    load_checks(queue.pk, maker.pk, reason.pk, big - 1, state="open")
    levels[str(big)] = measure(queue, checker, samples)
    print(f"{big} waiting (+16 leased): {levels[str(big)]}", flush=True)
    load_checks(queue.pk, maker.pk, reason.pk, big, state="done")
    levels[f"{big}+{big}done"] = measure(queue, checker, samples)
    print(f"{big} waiting + {big} done: {levels[f'{big}+{big}done']}", flush=True)

    base, top = levels["1"], levels[f"{big}+{big}done"]
    results["b9"] = {
        "levels": levels,
        "ratio_p50_big_vs_one": {
            k: round(levels[str(big)][k]["p50"] / base[k]["p50"], 2) for k in base
        },
        "ratio_p50_big_with_history_vs_one": {
            k: round(top[k]["p50"] / base[k]["p50"], 2) for k in base
        },
        "statements_per_check_cycle": statements_per_cycle(queue, checker),
    }
    print("B9 p50 ratios:", results["b9"]["ratio_p50_big_vs_one"],
          results["b9"]["ratio_p50_big_with_history_vs_one"])  # fmt: skip
    print("statements per check cycle:", results["b9"]["statements_per_check_cycle"])
    path = write_results("next_check-smoke" if args.smoke else "next_check", results)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
