"""B3's bound: what a Python client reaches of pgbench, as the cycle is sent now and in two calls.

B3 compares the services with pgbench on the same statements, and its psycopg floor shows what
any Python client reaches on them. This scenario asks whether a different shape of the same
work would let a Python client reach B3's target: the cycle's statements moved into two
PL/pgSQL functions, a claim (the timeouts and access check, the renew, the claim) and a
decide (the access check, the close, the decision's insert), called once each, each call its
own transaction. Both functions are built at run time from queue_app/db/statements, in
this run's scratch database only, so they cannot drift from what the services run.

Five sides at 1, 8 and 32 processes, alternating, each reading the rate, the clients' CPU per
cycle and the server's (every postgres process; bench.common.server_cpu_seconds):

- `services`, `floor` and `pgbench`: B3's three sides (bench/cycle.py), the statements as the
  services send them;
- `functions floor`: the two calls from psycopg alone, prepared;
- `functions pgbench`: the same two calls from pgbench -M prepared.

What the functions leave out, on both of their sides alike: the evidence comparison and the
second-person choices that the services make in Python between the close and the insert (no
decision here needs a check or is drawn for QA, as in B3's pgbench script), and the apply
workers' wake-up after the commit (pgbench 15 cannot end a transaction inside a pipeline).

    .venv/bin/python bench/cycle_bound.py            # ~10 min (run_all runs it after B3)
    .venv/bin/python bench/cycle_bound.py --smoke    # tiny, for CI
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    machine,
    paired_ratio,
    run_pgbench,
    server_cpu_seconds,
    server_pids,
    start_together,
    stocked_queue,
    wait_for_new_server_processes,
    write_results,
)

DB = "rc_bench_cycle_bound"
EVIDENCE = "a" * 64
SIDES = ("services", "floor", "pgbench", "functions floor", "functions pgbench")
# The two calls, with psycopg's named parameters (pgbench's script binds them as literals).
CLAIM_CALL = (
    "SELECT item_id, lease_token FROM bench_claim(%(queue_id)s, %(owner_id)s, '2000ms', "
    "'5000ms', interval '600 seconds', 2147483647, interval '900 seconds')"
)
DECIDE_CALL = (
    "SELECT bench_decide(%(item_id)s, %(queue_id)s, %(owner_id)s, %(lease_token)s, '2000ms', "
    "'5000ms', %(reason_code)s, %(evidence_hash)s)"
)


def _into(statement: str, target: str) -> str:
    """A statement of queue_app/db/statements as a PL/pgSQL statement: parameters by name, INTO."""
    text = re.sub(r"%\((\w+)\)s", lambda m: f"p_{m.group(1)}", statement.strip())
    return f"{text.replace('%%', '%')}\n  INTO {target};"


def functions_sql() -> str:
    """The two functions, from the services' own statements (parameters become p_<name>)."""
    from queue_app.db.statements import access as access_sql
    from queue_app.db.statements import decisions as decisions_sql
    from queue_app.db.statements import leases as leases_sql

    return f"""
CREATE FUNCTION bench_claim(p_queue_id bigint, p_owner_id int, p_lock_timeout text,
    p_statement_timeout text, p_ttl interval, p_max_leases int, p_release_skip interval)
RETURNS TABLE (item_id bigint, lease_token uuid) LANGUAGE plpgsql AS $body$
#variable_conflict use_column
DECLARE gate record; claimed record;
BEGIN
  {_into(access_sql.SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE, "gate")}
  IF NOT gate.allowed THEN
    RAISE EXCEPTION 'may not review this queue';
  END IF;
  {_into(leases_sql.RENEW_OWN_LIVE_LEASE, "claimed")}
  IF NOT FOUND THEN
    {_into(leases_sql.CLAIM_NEXT_ITEM, "claimed")}
    IF NOT FOUND THEN
      RETURN;
    END IF;
  END IF;
  item_id := claimed.id;
  lease_token := claimed.lease_token;
  RETURN NEXT;
END
$body$;

CREATE FUNCTION bench_decide(p_item_id bigint, p_queue_id bigint, p_owner_id int,
    p_lease_token uuid, p_lock_timeout text, p_statement_timeout text, p_reason_code text,
    p_evidence_hash text) RETURNS bigint LANGUAGE plpgsql AS $body$
#variable_conflict use_column
DECLARE gate record; closed record; decided record;
  p_reviewer_id int := p_owner_id;
  p_verdict text := 'approve';
  p_note text := '';
  p_supersedes_id bigint := NULL;
  p_corrected_verdict text := NULL;
  p_needs_check boolean := false;
  p_qa_sampled boolean := false;
  p_suggestion_view text := NULL;
  p_suggestion_shown_at timestamptz := NULL;
BEGIN
  {_into(access_sql.SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS, "gate")}
  IF NOT gate.allowed THEN
    RAISE EXCEPTION 'may not review this queue';
  END IF;
  {_into(decisions_sql.CLOSE_ITEM, "closed")}
  IF NOT FOUND THEN
    RAISE EXCEPTION 'the lease is gone';
  END IF;
  {_into(decisions_sql.INSERT_DECISION, "decided")}
  RETURN decided.id;
END
$body$;
"""


def functions_pgbench_script(
    *, queue_id: int, reason_code: str, first_user: int, users: int
) -> str:
    """The two calls as one pgbench transaction per cycle (each call its own transaction)."""
    values = {
        "queue_id": ":queue_id",
        "owner_id": ":owner_id",
        "item_id": ":c_item_id",
        "lease_token": "(:c_lease_token)::uuid",
        "reason_code": f"'{reason_code}'",
        "evidence_hash": f"'{EVIDENCE}'",
    }

    def bind(call: str) -> str:
        return re.sub(r"%\((\w+)\)s", lambda m: values[m.group(1)], call)

    return "\n".join(
        [
            f"\\set queue_id {queue_id}",
            f"\\set owner_id {first_user} + (:client_id % {users})",
            bind(CLAIM_CALL),
            "\\gset c_",
            bind(DECIDE_CALL) + ";",
            "",
        ]
    )


def functions_worker(args: tuple[int, int, float, str], ready) -> tuple[int, float]:
    """The two calls from psycopg alone: a connection in autocommit, statements prepared."""
    import psycopg

    from bench.common import peak_rss_mb

    user_id, queue_id, seconds, reason_code = args
    conn = psycopg.connect(os.environ["DATABASE_URL"], prepare_threshold=0, autocommit=True)
    mine = {"queue_id": queue_id, "owner_id": user_id}
    ready()
    done = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        row = conn.execute(CLAIM_CALL, mine).fetchone()
        if row is None:
            break
        conn.execute(
            DECIDE_CALL,
            {
                **mine,
                "item_id": row[0],
                "lease_token": row[1],
                "reason_code": reason_code,
                "evidence_hash": EVIDENCE,
            },
        ).fetchone()
        done += 1
    conn.close()
    return done, peak_rss_mb()


def _worker(name: str):
    from bench import cycle

    return {
        "services": lambda a, ready: cycle.services_worker(a[:3], ready),
        "floor": cycle.floor_worker,
        "functions floor": functions_worker,
    }[name]


def _timed(arg: tuple[str, tuple], ready) -> tuple[int, float]:
    """Run one side's worker; return its cycles and its CPU seconds from ready() on."""
    name, work = arg
    started: list[float] = []

    def ready_then_time() -> None:
        ready()
        started.append(time.process_time())

    done, _rss = _worker(name)(work, ready_then_time)
    return done, time.process_time() - started[0]


def run_side(side: str, clients: int, work: list[tuple], scripts: dict, db: str, seconds: float):
    """Run one side once; return its rate and CPU per cycle (ms) of clients and server.

    The server's reading after the run waits for the run's backends to be reaped
    (wait_for_new_server_processes): until then an exited backend's CPU is in neither its own
    /proc entry nor its postmaster's.
    """
    running = server_pids()
    if side in scripts:
        server0, children0 = server_cpu_seconds(), _children_cpu()
        cycles = run_pgbench(clients, scripts[side], seconds, db)["per_second"] * seconds
        client = _children_cpu() - children0
    else:
        mark: list[float] = []
        _, out = start_together(
            _timed,
            [(side, w) for w in work[:clients]],
            on_start=lambda: mark.append(server_cpu_seconds()),
        )
        server0 = mark[0]
        cycles, client = sum(n for n, _ in out), sum(cpu for _, cpu in out)
    wait_for_new_server_processes(running)
    server = server_cpu_seconds() - server0
    cycles = max(cycles, 1)
    return {
        "per_second": round(cycles / seconds, 1),
        "client_cpu_ms": round(client * 1000 / cycles, 3),
        "server_cpu_ms": round(server * 1000 / cycles, 3),
    }


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    clients_list, seconds, reps, stock = (
        ([1, 2], 1.0, 1, 15_000) if args.smoke else ([1, 8, 32], 8.0, 2, 300_000)
    )

    import psycopg

    from bench import cycle

    db, queue, reason, users = stocked_queue(
        DB, smoke=args.smoke, slug="bound", reviewers=max(clients_list), stock=stock
    )
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(functions_sql())
    shape = {"queue_id": queue.pk, "reason_code": reason.code, "first_user": min(users)}
    work = [(u, queue.pk, seconds, reason.code) for u in users]

    results = {
        "machine": machine(),
        "smoke": args.smoke,
        "seconds": seconds,
        "repetitions": reps,
        "levels": {},
    }
    for clients in clients_list:
        scripts = {
            "pgbench": cycle.pgbench_script(**shape, users=clients),
            "functions pgbench": functions_pgbench_script(**shape, users=clients),
        }
        runs: dict[str, list[dict]] = {side: [] for side in SIDES}
        for _ in range(reps):
            for side in SIDES:
                runs[side].append(run_side(side, clients, work, scripts, db, seconds))
                print(f"   clients={clients:>2} {side}: {runs[side][-1]}", flush=True)

        def rates(side: str, runs: dict[str, list[dict]] = runs) -> list[float]:
            return [r["per_second"] for r in runs[side]]

        level = {
            side: {
                key: round(statistics.median(r[key] for r in runs[side]), 3)
                for key in ("per_second", "client_cpu_ms", "server_cpu_ms")
            }
            for side in SIDES
        }
        # Each ratio pairs the runs of one round (its sides ran minutes apart at most).
        level["ratios"] = {
            "services / pgbench": paired_ratio(rates("services"), rates("pgbench")),
            "floor / pgbench": paired_ratio(rates("floor"), rates("pgbench")),
            "functions floor / functions pgbench": paired_ratio(
                rates("functions floor"), rates("functions pgbench")
            ),
            "functions floor / floor": paired_ratio(rates("functions floor"), rates("floor")),
        }
        level["runs"] = runs
        results["levels"][str(clients)] = level
        print(f"bound clients={clients:>2}: {level['ratios']}", flush=True)
    print("wrote", write_results("cycle_bound-smoke" if args.smoke else "cycle_bound", results))


if __name__ == "__main__":
    main()
