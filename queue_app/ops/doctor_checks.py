"""Named health checks for the failure modes a review queue is known for.

Each check reads the database (and PostgreSQL's own statistics) through queue_app.selectors
and returns a CheckResult:
a name operators can search for, pass or fail, a one-line summary and the rows that explain
it. `manage.py doctor` prints them and exits non-zero if any failed, for cron and monitors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from queue_app.datetimes import local_text
from queue_app.selectors import health
from queue_app.selectors.deadline_figures import read_sla
from queue_app.selectors.lane_figures import read_lane_figures
from queue_app.selectors.queue_figures import (
    BLOCKED_SHOWN,
    LEASE_LEAK_RATIO,
    QueueFigures,
    read_open_work,
    unapplied_alert_after,
)


@dataclass(frozen=True)
class Thresholds:
    """When each check starts failing; the defaults suit a production queue."""

    starvation: timedelta = timedelta(minutes=60)
    # "Reviewers are active" means a live lease now or a decision this recently.
    active_within: timedelta = timedelta(minutes=15)
    long_transaction: timedelta = timedelta(seconds=60)
    lock_wait: timedelta = timedelta(seconds=5)
    unapplied: timedelta | None = None  # None: settings.UNAPPLIED_ALERT_MINUTES
    bloat_min_dead: int = 10_000
    bloat_dead_ratio: float = 0.3
    # Second-person lanes: a check holds back a decision's effect, so it should not wait long.
    lane_age: timedelta = timedelta(hours=4)
    # The sealer runs every second: anything unsealed this long means it has stopped.
    unsealed: timedelta = timedelta(minutes=5)


@dataclass
class CheckResult:
    name: str
    ok: bool
    summary: str
    details: list[dict[str, Any]] = field(default_factory=list)
    advice: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_double_lease(t: Thresholds) -> CheckResult:
    """DOUBLE_LEASE: nobody holds two live leases in one queue (the claim's invariant)."""
    rows = health.double_leases()
    if not rows:
        return CheckResult("DOUBLE_LEASE", True, "No reviewer holds two live leases in a queue.")
    return CheckResult(
        "DOUBLE_LEASE",
        False,
        f"{len(rows)} reviewer/queue pair(s) hold more than one live lease: "
        + ", ".join(f"{r['username']} in {r['queue']} ({r['live_leases']})" for r in rows),
        details=rows,
        advice="Something wrote leases outside the claim statement; check recent deploys and "
        "direct SQL. Release the extra items from the admin.",
    )


def check_lease_leak(t: Thresholds, figures: list[QueueFigures]) -> CheckResult:
    """LEASE_LEAK: no queue has its leased items near its max in flight."""
    near = [
        {
            "queue": f.slug,
            "leased": f.leased,
            "expired": f.expired_leases,
            "max_in_flight": f.max_in_flight,
        }
        for f in figures
        if f.max_in_flight and f.leased >= f.max_in_flight * LEASE_LEAK_RATIO
    ]
    if not near:
        return CheckResult(
            "LEASE_LEAK", True, f"Every queue is below {LEASE_LEAK_RATIO:.0%} of its max in flight."
        )
    return CheckResult(
        "LEASE_LEAK",
        False,
        "Leased items near max in flight: "
        + ", ".join(f"{n['queue']} {n['leased']}/{n['max_in_flight']}" for n in near),
        details=near,
        advice="Leases are taken and not closed: look for a client claiming batches it never "
        "decides, or a lease TTL far above the handling time (see /ops/).",
    )


def check_starvation(t: Thresholds, figures: list[QueueFigures]) -> CheckResult:
    """STARVATION: no pending item waits past the threshold while reviewers are working."""
    stale: list[dict[str, Any]] = [
        {"queue": f.slug, "oldest_pending_seconds": f.oldest_pending_age.total_seconds()}
        for f in figures
        if f.oldest_pending_age is not None and f.oldest_pending_age > t.starvation
    ]
    if not stale:
        return CheckResult("STARVATION", True, f"No item has waited over {t.starvation}.")
    active = health.reviewers_active(active_within=t.active_within)
    if not active:
        # A backlog nobody is working (a night, a holiday) is staffing, not starvation.
        return CheckResult(
            "STARVATION",
            True,
            f"Items have waited over {t.starvation}, but no reviewer is active.",
            details=stale,
        )
    return CheckResult(
        "STARVATION",
        False,
        f"Items wait over {t.starvation} while reviewers are active: "
        + ", ".join(
            f"{s['queue']} ({timedelta(seconds=int(s['oldest_pending_seconds']))})" for s in stale
        ),
        details=stale,
        advice="Higher-priority work or other queues take every reviewer: grant more people this "
        "queue, or look at the priorities of new items.",
    )


def check_lock_contention(t: Thresholds) -> CheckResult:
    """LOCK_CONTENTION: no long transaction or lock wait touches the queue tables."""
    problems = []
    for row in health.queue_table_locks():
        waiting = bool(row["blocked_by"]) and row["state_seconds"] >= t.lock_wait.total_seconds()
        long = (
            row["xact_seconds"] is not None
            and row["xact_seconds"] >= t.long_transaction.total_seconds()
        )
        if waiting or long:
            problems.append({**row, "waiting": waiting, "long_transaction": long})
    if not problems:
        return CheckResult(
            "LOCK_CONTENTION", True, "No long transaction or lock wait on the queue tables."
        )
    parts = []
    for p in problems:
        if p["waiting"]:
            parts.append(f"pid {p['pid']} waits on pid(s) {p['blocked_by']}")
        else:
            parts.append(f"pid {p['pid']} in a transaction for {p['xact_seconds']:.0f}s")
    return CheckResult(
        "LOCK_CONTENTION",
        False,
        "; ".join(parts),
        details=problems,
        advice="A transaction held open blocks claims (they fail after REVIEW_LOCK_TIMEOUT_MS). "
        "Find the client in pg_stat_activity; pg_terminate_backend(pid) if it is stuck.",
    )


def check_unapplied(t: Thresholds, figures: list[QueueFigures]) -> CheckResult:
    """UNAPPLIED: every decision older than the alert threshold has been carried out."""
    threshold = t.unapplied if t.unapplied is not None else unapplied_alert_after()
    slugs = {f.id: f.slug for f in figures}
    late = [
        {"queue": slugs.get(row["queue_id"], row["queue_id"]), **row}
        for row in health.apply_state(overdue_after=threshold)
        if row["overdue"]
    ]
    if not late:
        return CheckResult("UNAPPLIED", True, f"Every decision older than {threshold} is applied.")
    total = sum(row["overdue"] for row in late)
    return CheckResult(
        "UNAPPLIED",
        False,
        f"{total} decision(s) not applied after {threshold}: "
        + ", ".join(f"{r['queue']} {r['overdue']} ({r['dead']} dead)" for r in late),
        details=late,
        advice="Is run_apply_worker running? Dead jobs are listed on /ops/ with a retry button.",
    )


def check_blocked_effects(t: Thresholds) -> CheckResult:
    """BLOCKED_EFFECTS: no item's effects wait behind a dead effect job."""
    rows = health.blocked_effects(limit=BLOCKED_SHOWN)
    if not rows:
        return CheckResult(
            "BLOCKED_EFFECTS", True, "No item's effects wait behind a dead effect job."
        )
    items = sorted({r["item_id"] for r in rows})
    return CheckResult(
        "BLOCKED_EFFECTS",
        False,
        f"{len(items)} item(s) have effects held back by a dead job: "
        + "; ".join(
            f"item {r['item_id']} ({r['queue']}): decision {r['dead_decision_id']} is dead "
            f"after {r['attempts']} attempt(s) ({r['last_error'][:120]}), "
            f"decision(s) {', '.join(map(str, r['waiting_decision_ids']))} wait behind it"
            for r in rows
        ),
        details=rows,
        advice="Effects run in decision order per item, so a dead job holds back its item's "
        "later decisions (overturns). Fix what its last error names, then Retry it on /ops/ "
        "or in the admin's effect jobs. If an overturn has replaced it, the retry records it "
        "as superseded without running it, and the waiting effects follow.",
    )


def check_bloat(t: Thresholds) -> CheckResult:
    """BLOAT: autovacuum keeps up with the dead tuples the claim and decide updates leave."""
    bloated = [
        row
        for row in health.table_bloat()
        if row["n_dead_tup"] >= t.bloat_min_dead
        and row["n_dead_tup"] >= t.bloat_dead_ratio * max(row["n_live_tup"], 1)
    ]
    if not bloated:
        return CheckResult("BLOAT", True, "Dead tuples on the queue tables are within bounds.")
    tables = ", ".join(r["table_name"] for r in bloated)
    return CheckResult(
        "BLOAT",
        False,
        "Dead tuples pile up: "
        + ", ".join(
            f"{r['table_name']} {r['n_dead_tup']} dead / {r['n_live_tup']} live" for r in bloated
        ),
        details=bloated,
        # Every claim, renew and decide rewrites an item row; the default scale factor (20% of
        # the table) lets a large, hot table collect millions of dead rows between vacuums.
        advice=f"VACUUM (ANALYZE) {tables}; then make autovacuum visit them sooner: "
        "ALTER TABLE <table> SET (autovacuum_vacuum_scale_factor = 0.01, "
        "autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_limit = 1000).",
    )


def check_lane_backlog(t: Thresholds) -> CheckResult:
    """LANE_BACKLOG: no second-person lane's oldest task is older than the threshold."""
    old = [
        b
        for b in read_lane_figures().backlog
        if b.oldest_age is not None and b.oldest_age > t.lane_age
    ]
    if not old:
        return CheckResult(
            "LANE_BACKLOG",
            True,
            f"No check, QA review or adjudication has waited longer than {t.lane_age}.",
        )
    return CheckResult(
        "LANE_BACKLOG",
        False,
        "Second-person work is waiting too long: "
        + "; ".join(
            f"{b.queue} {b.name}: {b.open} waiting, the oldest for {b.oldest_age}" for b in old
        ),
        details=[
            {"queue": b.slug, "lane": b.kind, "open": b.open, "oldest": b.oldest} for b in old
        ],
        advice="A waiting check holds back its decision's effect. Add checkers to the queue's "
        "reviewer group (a maker never gets their own check), or narrow the queue's "
        "maker-checker policy in the admin; lower the QA sample rate if QA cannot keep up.",
    )


def run_checks(thresholds: Thresholds | None = None) -> list[CheckResult]:
    """Run every named check, in a fixed order, and return their results."""
    t = thresholds or Thresholds()
    figures = read_open_work()
    checks: list[Callable[[], CheckResult]] = [
        lambda: check_double_lease(t),
        lambda: check_lease_leak(t, figures),
        lambda: check_starvation(t, figures),
        lambda: check_lock_contention(t),
        lambda: check_unapplied(t, figures),
        lambda: check_blocked_effects(t),
        lambda: check_bloat(t),
        lambda: check_sla_breach(t),
        lambda: check_lane_backlog(t),
        lambda: check_unsealed(t),
    ]
    return [check() for check in checks]


def check_sla_breach(t: Thresholds) -> CheckResult:
    """SLA_BREACH: no open item is past its deadline (items on hold are paused, and
    an item awaiting its check is open until the check confirms it)."""
    breached = [
        {
            "queue": f.slug,
            "breached": f.breached,
            "awaiting_check": f.breached_checks,
            "at_risk": f.at_risk,
        }
        for f in read_sla()
        if f.breached
    ]
    if not breached:
        return CheckResult("SLA_BREACH", True, "No open item is past its deadline.")
    advice = (
        "Next item already takes the earliest deadline first within a priority: if "
        "breaches grow, the queue needs more reviewers or its default SLA is shorter than the "
        "work takes. Items waiting on the customer should be put on hold (the deadline pauses) "
        "rather than left open; raise the priority of the breached items if they must go first."
    )
    if any(b["awaiting_check"] for b in breached):
        advice += (
            " Items awaiting their check are decided but not final: they need a checker "
            "(the Checks lane), not another reviewer."
        )
    return CheckResult(
        "SLA_BREACH",
        False,
        "Open items are past their deadline: "
        + ", ".join(
            f"{b['queue']} ({b['breached']}"
            + (f", {b['awaiting_check']} awaiting their check" if b["awaiting_check"] else "")
            + ")"
            for b in breached
        ),
        details=breached,
        advice=advice,
    )


def check_unsealed(t: Thresholds) -> CheckResult:
    """UNSEALED: every committed decision and second-person outcome is sealed within the
    threshold (a checkpoint covers only what is sealed)."""
    row = health.sealing_backlog()
    late = [
        {"entries": kind, "waiting": row[kind], "oldest": row[oldest]}
        for kind, oldest in (("decisions", "oldest_decision"), ("outcomes", "oldest_outcome"))
        if row[oldest] is not None and row["now"] - row[oldest] > t.unsealed
    ]
    if not late:
        waiting = row["decisions"] + row["outcomes"]
        return CheckResult(
            "UNSEALED",
            True,
            f"Nothing has waited longer than {t.unsealed} to be sealed ({waiting} waiting now).",
        )
    return CheckResult(
        "UNSEALED",
        False,
        "Committed entries are not being sealed: "
        + "; ".join(
            f"{e['waiting']} {e['entries']} waiting, the oldest made {local_text(e['oldest'])}"
            for e in late
        ),
        details=[{**e, "oldest": e["oldest"].isoformat()} for e in late],
        advice="The apply worker seals every second: check that run_apply_worker is running "
        "and read its log, or seal now with manage.py seal_decisions. Until they are sealed, "
        "these decisions and outcomes are in no batch, so no checkpoint covers them.",
    )
