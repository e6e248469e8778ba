"""The aggregate statements behind /ops/, /metrics and doctor, named and commented.

Each one answers for every queue at once (GROUP BY queue), so the cost of a page is a fixed
handful of statements whatever the number of queues or items. Open work is read through the
partial indexes the claim uses (item_pending_claim, item_leased_expiry), so the million decided
rows are never walked for it. Statements over decisions are bounded to a recent window on
created_at; that column has no index yet (see README, "Operations": a BRIN index is proposed).

All read-only: nothing here takes a row lock or can block a reviewer.
"""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "OPEN_WORK": "Open work per queue: counts, oldest pending item and lease-count histogram.",
    "DECISIONS_PER_HOUR": "Decisions per queue and hour over the window, zeros included.",
    "TIME_TO_DECISION": "Handling time of reviewer verdicts in the window, per queue.",
    "REASON_SHARES": "Which reasons dominate each verdict, per queue, over the window.",
    "APPLY_STATE": "Decisions not carried out yet, per queue, and how late the oldest is.",
    "DEAD_JOBS": "The dead effect jobs an operator should look at, newest failure first.",
    "BLOCKED_EFFECTS": "Items whose later effects a dead job holds back.",
    "DOUBLE_LEASES": "People holding more than one live lease in one queue.",
    "REVIEWERS_ACTIVE": "Whether anyone is working: a live lease, or a recent decision.",
    "QUEUE_TABLE_LOCKS": "Backends holding or waiting for locks on the queue tables.",
    "TABLE_BLOAT": "Dead tuples on the queue tables.",
    "SLA_OPEN": "Open work against its deadline, and holds, per queue.",
    "SLA_DECISIONS": "Outcomes made final in the window: how many late, time left at p50 and p90.",
    "SEALING_BACKLOG": "What waits for the sealer, and the oldest of each kind.",
}

# Open work per queue: counts, oldest pending item and the lease-count histogram in one pass.
# Each half of the UNION carries its partial index's predicate, so the planner reads pending
# rows from item_pending_claim and leased rows from item_leased_expiry, never decided history.
# Lease counts at or above %(top_bucket)s share one bucket ("5+").
OPEN_WORK = """
WITH open_items AS (
    SELECT queue_id, 'pending' AS state, least(lease_count, %(top_bucket)s) AS bucket,
           created_at, false AS expired
      FROM queue_app_reviewitem
     WHERE state = 'pending'
    UNION ALL
    SELECT queue_id, 'leased', least(lease_count, %(top_bucket)s), created_at,
           lease_expires < now()
      FROM queue_app_reviewitem
     WHERE state = 'leased'
)
SELECT queue_id, bucket,
       count(*) FILTER (WHERE state = 'pending') AS pending,
       count(*) FILTER (WHERE state = 'leased') AS leased,
       count(*) FILTER (WHERE expired) AS expired,
       extract(epoch FROM now() - min(created_at) FILTER (WHERE state = 'pending'))
           AS oldest_pending_seconds
  FROM open_items
 GROUP BY queue_id, bucket
"""

# Decisions per hour over the last %(hours)s hours, every queue times every hour (zeros
# included, so a chart never has gaps). Every window over decisions starts at the same hour
# boundary, so the figures on one page add up. "Decisions" are reviewer verdicts only: overturns
# are corrections, not throughput, and are counted apart (REASON_SHARES leaves them out too).
DECISIONS_PER_HOUR = """
WITH hours AS (
    SELECT generate_series(date_trunc('hour', now()) - make_interval(hours => %(hours)s - 1),
                           date_trunc('hour', now()), interval '1 hour') AS hour
), counts AS (
    SELECT queue_id, date_trunc('hour', created_at) AS hour,
           count(*) FILTER (WHERE verdict <> 'overturn') AS decisions,
           count(*) FILTER (WHERE verdict = 'overturn') AS overturns
      FROM queue_app_decision
     WHERE created_at >= date_trunc('hour', now()) - make_interval(hours => %(hours)s - 1)
     GROUP BY 1, 2
)
SELECT q.id AS queue_id, h.hour, coalesce(c.decisions, 0) AS decisions,
       coalesce(c.overturns, 0) AS overturns
  FROM queue_app_queue AS q
 CROSS JOIN hours AS h
  LEFT JOIN counts AS c ON c.queue_id = q.id AND c.hour = h.hour
 ORDER BY q.id, h.hour
"""

# Handling time of each reviewer verdict in the window: from the claim the item was decided
# under (its last claimed/reclaimed event before the decision) to the decision. This, not
# "since the item arrived", is what a lease must cover: queueing time and abandoned earlier
# leases say nothing about how long a person needs the item on screen. One index probe per
# decision into itemevent_item_at (item_id, at).
TIME_TO_DECISION = """
SELECT d.queue_id,
       count(*) AS samples,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - c.at)) AS p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - c.at)) AS p90,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - c.at))
           AS p99
  FROM queue_app_decision AS d
 CROSS JOIN LATERAL (
        SELECT e.at
          FROM queue_app_itemevent AS e
         WHERE e.item_id = d.item_id AND e.kind IN ('claimed', 'reclaimed')
           AND e.at <= d.created_at
         ORDER BY e.at DESC
         LIMIT 1
       ) AS c
 WHERE d.created_at >= date_trunc('hour', now()) - make_interval(hours => %(hours)s - 1)
   AND d.verdict <> 'overturn'
 GROUP BY d.queue_id
"""

# Which reasons dominate each verdict, per queue, over the window: count and share of the
# verdict's decisions. Reviewer verdicts only, counted exactly as DECISIONS_PER_HOUR counts
# them, so a queue's reason counts add up to its decision count; overturns are counted apart.
REASON_SHARES = """
SELECT d.queue_id, d.verdict, r.code, r.label, count(*) AS decisions,
       count(*)::float8 / sum(count(*)) OVER (PARTITION BY d.queue_id, d.verdict) AS share
  FROM queue_app_decision AS d
  JOIN queue_app_reasoncode AS r ON r.id = d.reason_code_id
 WHERE d.created_at >= date_trunc('hour', now()) - make_interval(hours => %(hours)s - 1)
   AND d.verdict <> 'overturn'
 GROUP BY d.queue_id, d.verdict, r.code, r.label
 ORDER BY d.queue_id, d.verdict, decisions DESC, r.code
"""

# Decisions a person made that the system has not carried out yet, per queue: every effect job
# not done and with no AppliedDecision row (either proves it applied). Two halves so each can
# use an index: live jobs carry effectjob_due's predicate; dead jobs are few but have no index
# of their own yet (README, Operations: proposed). Ages come from the decision itself, the
# fact, not from the job's retry bookkeeping. `blocked` counts the live jobs that wait behind
# a dead job of the same item (effects run in decision order per item): the few dead jobs give
# each item's first dead decision, hash-joined to the open jobs.
APPLY_STATE = """
WITH open_jobs AS (
    SELECT decision_id, queue_id, false AS dead
      FROM queue_app_effectjob
     WHERE done_at IS NULL AND dead = false
    UNION ALL
    SELECT decision_id, queue_id, true
      FROM queue_app_effectjob
     WHERE done_at IS NULL AND dead = true
), first_dead AS (
    SELECT dd.item_id, min(dd.id) AS decision_id
      FROM queue_app_effectjob AS dj
      JOIN queue_app_decision AS dd ON dd.id = dj.decision_id
     WHERE dj.dead = true AND dj.done_at IS NULL
     GROUP BY dd.item_id
)
SELECT j.queue_id,
       count(*) AS unapplied,
       count(*) FILTER (WHERE d.created_at < now() - %(overdue_after)s) AS overdue,
       extract(epoch FROM now() - min(d.created_at)) AS oldest_age_seconds,
       count(*) FILTER (WHERE j.dead) AS dead,
       count(*) FILTER (WHERE NOT j.dead AND d.id > f.decision_id) AS blocked
  FROM open_jobs AS j
  JOIN queue_app_decision AS d ON d.id = j.decision_id
  LEFT JOIN first_dead AS f ON f.item_id = d.item_id
 WHERE NOT EXISTS (SELECT 1 FROM queue_app_applieddecision AS a WHERE a.decision_id = j.decision_id)
 GROUP BY j.queue_id
"""

# The dead effect jobs an operator should look at, newest failure first, with what they need
# to act: the decision, its item, the attempts made and the last error.
DEAD_JOBS = """
SELECT j.decision_id, j.queue_id, q.slug AS queue, d.item_id, d.verdict, j.attempts,
       j.last_error, d.created_at AS decided_at
  FROM queue_app_effectjob AS j
  JOIN queue_app_decision AS d ON d.id = j.decision_id
  JOIN queue_app_queue AS q ON q.id = j.queue_id
 WHERE j.dead = true AND j.done_at IS NULL
 ORDER BY j.decision_id DESC
 LIMIT %(limit)s
"""

# Items whose later effects are held back by a dead job (effects run in decision order per
# item: outbox_sql.CLAIM_DUE_EFFECT_JOBS). One row per dead job that something waits behind, with
# what an operator needs: the item, the dead decision and its error, and the decisions
# waiting. Starts from the few dead jobs (effectjob_dead); the item's later decisions come
# through the item foreign key's index.
BLOCKED_EFFECTS = """
SELECT d.item_id, q.slug AS queue, j.decision_id AS dead_decision_id, d.verdict,
       j.attempts, j.last_error,
       array_agg(later.id ORDER BY later.id) AS waiting_decision_ids,
       extract(epoch FROM now() - min(later.created_at)) AS waiting_seconds
  FROM queue_app_effectjob AS j
  JOIN queue_app_decision AS d ON d.id = j.decision_id
  JOIN queue_app_queue AS q ON q.id = j.queue_id
  JOIN queue_app_decision AS later ON later.item_id = d.item_id AND later.id > d.id
  JOIN queue_app_effectjob AS lj ON lj.decision_id = later.id AND lj.done_at IS NULL
 WHERE j.dead = true AND j.done_at IS NULL
 GROUP BY d.item_id, q.slug, j.decision_id, d.verdict, j.attempts, j.last_error
 ORDER BY d.item_id, j.decision_id
 LIMIT %(limit)s
"""

# -- doctor --------------------------------------------------------------------------------------

# People holding more than one live lease in one queue: the claim's invariant (one per reviewer
# per queue, serialised by an advisory lock). Service users of API clients lease in batches by
# design and are left out. Read through item_lease_owner.
DOUBLE_LEASES = """
SELECT i.queue_id, q.slug AS queue, i.lease_owner_id AS reviewer_id, u.username,
       count(*) AS live_leases, array_agg(i.id ORDER BY i.id) AS item_ids
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
  JOIN auth_user AS u ON u.id = i.lease_owner_id
 WHERE i.state = 'leased' AND i.lease_expires > now()
   AND NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = i.lease_owner_id)
 GROUP BY i.queue_id, q.slug, i.lease_owner_id, u.username
HAVING count(*) > 1
"""

# Whether anyone is working: a live lease anywhere, or a decision within %(active_within)s.
# The latest decision is read through the primary key (ids grow with time), not a scan.
REVIEWERS_ACTIVE = """
SELECT EXISTS (SELECT 1 FROM queue_app_reviewitem WHERE state = 'leased' AND lease_expires > now())
    OR coalesce((SELECT created_at FROM queue_app_decision ORDER BY id DESC LIMIT 1)
                > now() - %(active_within)s, false) AS active
"""

# Backends in this database that hold or wait for locks on the queue tables, with how long
# their transaction has been open and whether (and by whom) they are blocked. A row lock
# waiter waits on a transaction id, not a relation, so "waiting" comes from
# pg_blocking_pids(); the relations it touches still show as granted relation locks.
QUEUE_TABLE_LOCKS = """
SELECT a.pid, a.usename, a.application_name, a.state,
       extract(epoch FROM now() - a.xact_start) AS xact_seconds,
       extract(epoch FROM now() - a.state_change) AS state_seconds,
       pg_blocking_pids(a.pid) AS blocked_by,
       left(a.query, 200) AS query,
       array_agg(DISTINCT c.relname::text ORDER BY c.relname::text) AS tables
  FROM pg_locks AS l
  JOIN pg_class AS c ON c.oid = l.relation
  JOIN pg_stat_activity AS a ON a.pid = l.pid
 WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND c.relname LIKE 'queue\\_app\\_%%'
   AND a.pid <> pg_backend_pid()
   AND a.backend_type = 'client backend'
 GROUP BY a.pid, a.usename, a.application_name, a.state, a.xact_start, a.state_change, a.query
"""

# Dead tuples on the queue tables (the claim rewrites item rows all day long).
TABLE_BLOAT = """
SELECT relname::text AS table_name, n_live_tup, n_dead_tup, last_autovacuum, last_vacuum
  FROM pg_stat_user_tables
 WHERE relname LIKE 'queue\\_app\\_%%'
 ORDER BY n_dead_tup DESC
"""

# -- deadlines and holds ------------------------------------------------------------------------

# Open work against its deadline, and holds, per queue. Two halves, each on its own partial
# index: deadlines of open items (item_open_work_due: pending, leased, held, or decided but awaiting
# its check, with a due_at) and holds (item_held_until). An item's deadline runs until its
# outcome is final, so a check left waiting counts; breached_checks says how
# many of the breached are waiting for a checker rather than a reviewer. Breached: due_at
# passed. At risk: due within the queue's sla_warning. On hold: held and not yet due back; due
# back: held, time come, not yet claimed (the next claim takes it). Decided history is never read.
SLA_OPEN = """
WITH deadlines AS (
    SELECT i.queue_id,
           count(*) FILTER (WHERE i.due_at < now()) AS breached,
           count(*) FILTER (WHERE i.due_at < now() AND i.state = 'awaiting_check')
               AS breached_checks,
           count(*) FILTER (WHERE i.due_at >= now() AND i.due_at < now() + q.sla_warning)
               AS at_risk
      FROM queue_app_reviewitem AS i
      JOIN queue_app_queue AS q ON q.id = i.queue_id
     WHERE i.state IN ('pending', 'leased', 'held', 'awaiting_check') AND i.due_at IS NOT NULL
     GROUP BY i.queue_id
), holds AS (
    SELECT queue_id,
           count(*) FILTER (WHERE hold_until > now()) AS on_hold,
           count(*) FILTER (WHERE hold_until <= now()) AS due_back,
           extract(epoch FROM now() - min(held_at) FILTER (WHERE hold_until > now()))
               AS oldest_hold_seconds
      FROM queue_app_reviewitem
     WHERE state = 'held'
     GROUP BY queue_id
)
SELECT coalesce(d.queue_id, h.queue_id) AS queue_id,
       coalesce(d.breached, 0) AS breached, coalesce(d.breached_checks, 0) AS breached_checks,
       coalesce(d.at_risk, 0) AS at_risk,
       coalesce(h.on_hold, 0) AS on_hold, coalesce(h.due_back, 0) AS due_back,
       h.oldest_hold_seconds
  FROM deadlines AS d FULL JOIN holds AS h ON h.queue_id = d.queue_id
"""

# Outcomes made final in the last %(hours)s hours on items with a deadline: how many came after
# it, and the time left to the deadline at that moment (p50, p90; negative = late). A verdict
# that needs no check is final when recorded; one that needs a check, when the checker confirms
# it (a returned one never is). Two halves, each bounded by its own time index: the decisions'
# BRIN window (with one probe of queue_app_lanetask's decision index each, for a check), and
# the check outcomes' laneoutcome_kind_at. One primary-key probe per outcome for its item's
# due_at (a decided item's due_at never moves again).
SLA_DECISIONS = """
WITH final AS (
    SELECT d.queue_id, d.item_id, d.created_at AS at
      FROM queue_app_decision AS d
     WHERE d.created_at >= now() - make_interval(hours => %(hours)s)
       AND d.verdict <> 'overturn'
       AND NOT EXISTS (SELECT 1 FROM queue_app_lanetask AS t
                        WHERE t.decision_id = d.id AND t.kind = 'check')
    UNION ALL
    SELECT t.queue_id, t.item_id, o.created_at
      FROM queue_app_laneoutcome AS o
      JOIN queue_app_lanetask AS t ON t.id = o.task_id
     WHERE o.kind = 'check' AND o.created_at >= now() - make_interval(hours => %(hours)s)
       AND o.result = 'confirmed'
)
SELECT f.queue_id,
       count(*) AS samples,
       count(*) FILTER (WHERE f.at > i.due_at) AS late,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM i.due_at - f.at)) AS p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM i.due_at - f.at)) AS p90
  FROM final AS f
  JOIN queue_app_reviewitem AS i ON i.id = f.item_id
 WHERE i.due_at IS NOT NULL
 GROUP BY f.queue_id
"""

# -- the sealed log (migrations 0010 and 0020) -----------------------------------------------------

# What waits for the sealer: decisions and second-person outcomes committed but not yet in a
# batch, and when the oldest of each was made. The sealer (the apply worker, every second)
# empties both lists, so they are short unless it has stopped; the join reads only the rows
# waiting, by primary key.
SEALING_BACKLOG = """
SELECT (SELECT count(*) FROM queue_app_unsealeddecision) AS decisions,
       (SELECT min(d.created_at) FROM queue_app_unsealeddecision AS u
          JOIN queue_app_decision AS d ON d.id = u.decision_id) AS oldest_decision,
       (SELECT count(*) FROM queue_app_unsealedlaneoutcome) AS outcomes,
       (SELECT min(o.created_at) FROM queue_app_unsealedlaneoutcome AS u
          JOIN queue_app_laneoutcome AS o ON o.task_id = u.outcome_id) AS oldest_outcome,
       now() AS now
"""
