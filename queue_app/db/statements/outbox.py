"""The effect-job outbox the apply workers drain, and their wake-up."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "WAKE_APPLY_WORKERS": "Wake the apply workers after effect jobs were queued.",
    "CLAIM_DUE_EFFECT_JOBS": (
        "Claim due effect jobs, in decision order per item, locked until commit."
    ),
    "INSERT_APPLIED_DECISION": (
        "Record that a decision's effect is carried out (first applier only)."
    ),
    "MARK_EFFECT_JOB_DONE": "Close an effect job in the transaction that applied it.",
    "RECORD_EFFECT_JOB_FAILURE": "Record a failed attempt: retry later, or mark the job dead.",
}

# Wake the apply workers (they LISTEN on this channel) after effect jobs were queued. Sent in a
# transaction of its own once the one that queued the jobs has committed
# (runner.wake_apply_workers_after_commit), never inside it: PostgreSQL holds one
# cluster-wide lock from a notifying transaction's commit until its commit record is flushed,
# which would make every decision in every queue commit one at a time. A
# transaction that only notifies writes no WAL of its own, so it commits without a flush.
WAKE_APPLY_WORKERS = "SELECT pg_notify('queue_app_effect_jobs', '')"

# -- apply worker --------------------------------------------------------------------------------
# The outbox drain (queue_app/apply.py). A job is due when it is neither done nor dead and its
# next attempt time has come; the partial index effectjob_due holds exactly those rows.

# Claim up to %(limit)s due effect jobs, oldest due first, and hold their row locks until the
# caller's transaction ends. SKIP LOCKED: a job another worker (on this machine or another) is
# applying right now is walked past, not waited on and not taken twice. The lock, not a flag,
# is the claim: a worker that dies releases it with its connection, so nothing needs sweeping.
#
# Per item, in decision order: a job is not claimable while an earlier decision of the same
# item has a job not done (retrying, dead, or in another worker's open batch: a job locked
# elsewhere is still "not done" in our snapshot, so two workers never hold two jobs of one
# item at once). done_at only ever goes from NULL to set, so a stale snapshot can only make
# this more cautious, never let a later job through early. A dead job thus blocks its item's
# later effects until an operator retries it (doctor BLOCKED_EFFECTS names it). Cheap: one
# item has a handful of decisions, read through the item foreign key's index, each probed in
# the job's primary key. Decision ids order an item's decisions: an overturn is inserted after
# the row it supersedes committed. item_sequence, the decision's ordinal within its item, goes
# to receivers (webhook bodies) so they can order what they get too.
CLAIM_DUE_EFFECT_JOBS = """
SELECT j.decision_id, j.attempts,
       (SELECT count(*) FROM queue_app_decision AS s
         WHERE s.item_id = d.item_id AND s.id <= d.id) AS item_sequence
  FROM queue_app_effectjob AS j
  JOIN queue_app_decision AS d ON d.id = j.decision_id
 WHERE j.done_at IS NULL AND NOT j.dead AND j.next_attempt_at <= now()
   AND NOT EXISTS (
       SELECT 1
         FROM queue_app_decision AS earlier
         JOIN queue_app_effectjob AS e ON e.decision_id = earlier.id
        WHERE earlier.item_id = d.item_id AND earlier.id < d.id AND e.done_at IS NULL)
 ORDER BY j.next_attempt_at
 LIMIT %(limit)s
   FOR UPDATE OF j SKIP LOCKED
"""

# Record that a decision's effect is being carried out, in the same transaction as the effect.
# Returns a row only for the first applier: a second attempt (a job whose done mark was lost)
# gets nothing back and must not run the effect again. applied_at is the wall clock, not the
# transaction start, so lag measurements inside a batch are honest.
#
# A decision an overturn has replaced by now is recorded as 'superseded', its successor named
# in the outcome, and the caller does not run its effect: a receiver never gets a verdict that
# no longer stands after the one that does. Only an overturn in force replaces it, as the
# item's story says (queue_app/models/story.py): one awaiting its check may yet be returned, and
# until then the decision it names stands and is carried out. At most one overturn of a
# decision is not returned (the decision_one_overturn trigger), so the subquery has one row
# at most. An overturn arriving after this statement waits (overturn_decision's FOR UPDATE on
# the decision conflicts with the key-share lock this insert's foreign key check holds until
# commit), and its own job, written now or at its check's confirmation, waits behind this one.
INSERT_APPLIED_DECISION = """
INSERT INTO queue_app_applieddecision (decision_id, applied_at, outcome, status)
SELECT %(decision_id)s, clock_timestamp(),
       CASE WHEN s.id IS NULL THEN %(outcome)s::jsonb
            ELSE %(outcome)s::jsonb || jsonb_build_object('superseded_by', s.id) END,
       CASE WHEN s.id IS NULL THEN 'applied' ELSE 'superseded' END
  FROM (SELECT (SELECT o.id
                  FROM queue_app_decision AS o
                  JOIN queue_app_decisionstatus AS os ON os.decision_id = o.id
                 WHERE o.supersedes_id = %(decision_id)s
                   AND os.status NOT IN ('awaiting_check', 'returned')) AS id) AS s
ON CONFLICT (decision_id) DO NOTHING
RETURNING decision_id, status
"""

# Close a job in the transaction that applied it (or found it applied already).
MARK_EFFECT_JOB_DONE = """
UPDATE queue_app_effectjob
   SET done_at = now(), attempts = attempts + 1
 WHERE decision_id = %(decision_id)s AND done_at IS NULL
"""

# Record a failed attempt: count it, keep the error, and either schedule the next attempt after
# %(delay)s or, past the maximum (or for a failure retrying cannot fix), mark it dead so it
# leaves the due index and waits for an operator.
RECORD_EFFECT_JOB_FAILURE = """
UPDATE queue_app_effectjob
   SET attempts = attempts + 1,
       last_error = %(error)s,
       dead = %(permanent)s OR attempts + 1 >= %(max_attempts)s,
       next_attempt_at = now() + %(delay)s
 WHERE decision_id = %(decision_id)s AND done_at IS NULL
RETURNING attempts, dead, next_attempt_at
"""
