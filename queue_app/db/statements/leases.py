"""Claiming, renewing and releasing review items, and escalating abandoned ones."""

from __future__ import annotations

from queue_app.db.statements.access import _MAY_REVIEW

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "CLAIM_ITEMS": "Claim a batch of items for an automated worker that may review the queue.",
    "CLAIM_NEXT_ITEM": (
        "A reviewer's Next item: claim one, unless they hold a live lease in the queue."
    ),
    "RENEW_OWN_LIVE_LEASE": "Renew and return the reviewer's own live lease in the queue, if any.",
    "CLAIM_NEXT_ITEM_FOR_PAGE": (
        "CLAIM_NEXT_ITEM returning only what the console's item page needs."
    ),
    "RENEW_OWN_LIVE_LEASE_FOR_PAGE": (
        "RENEW_OWN_LIVE_LEASE returning only what the console's item page needs."
    ),
    "RENEW_LEASE": (
        "Extend a lease, fenced by its token, if the holder may still review the queue."
    ),
    "RELEASE_LEASE": "Give a leased item back to the queue, fenced by its token.",
    "ESCALATE_ABANDONED": "Move abandoned items to their queue's escalation queue.",
}

# Renew and return the reviewer's own live lease in this queue, if there is one: a second
# Next (another tab, a reload) gets the item already on their screen, with the same token.
# Nothing for a reviewer who may no longer review the queue.
# The outer WHERE repeats the lease conditions on purpose. The subquery runs once, on the
# statement's snapshot; if the row it names is being written by someone else (the first tab's
# decision, another reviewer re-claiming it after expiry), the UPDATE waits for that lock and
# then PostgreSQL re-checks only the outer WHERE against the row as committed (EvalPlanQual),
# never the subquery. Without the repeat the renew would land on a decided row (a check
# violation) or extend another reviewer's lease and hand over their token.
_RENEW_OWN_LIVE_LEASE = (
    """
UPDATE queue_app_reviewitem AS i
   SET lease_expires = now() + %(ttl)s
 WHERE i.id = (
        SELECT id FROM queue_app_reviewitem
         WHERE queue_id = %(queue_id)s AND state = 'leased'
           AND lease_owner_id = %(owner_id)s AND lease_expires > now()
         ORDER BY lease_expires DESC
         LIMIT 1
       )
   AND i.queue_id = %(queue_id)s
   AND i.state = 'leased' AND i.lease_owner_id = %(owner_id)s AND i.lease_expires > now()
   AND """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """
RETURNING {returning}
"""
)

# Claim up to %(limit)s items: expired leases first (oldest expiry), then holds whose time has
# come (soonest back first), then fresh work by priority, earliest deadline (none last) and
# age. Safe because:
# - each candidate set is chosen with FOR UPDATE SKIP LOCKED, so concurrent claimers walk past
#   rows another claimer is stamping instead of waiting on them or taking them twice;
# - the candidate CTEs are MATERIALIZED and carry their LIMIT inside, so the planner cannot
#   inline them into the UPDATE and re-run the scan (which could lock more rows than it claims);
# - the expired, held and pending scans each use their own partial index (item_leased_expiry,
#   item_held_until, item_pending_claim): live leases, holds not yet due and decided history
#   are never walked;
# - the UPDATE re-checks nothing because the row lock is held from selection to stamp, and
#   the new random token fences every later write by the previous holder.
# Items already leased %(max_leases)s times are left for the escalation sweep, except items a
# checker returned (review_round > 0): their decision pins them to this queue, so the sweep
# cannot move them (ESCALATE_ABANDONED) and they stay claimable here rather than stuck.
# Pending items the claimer released less than %(release_skip)s ago come last: they are taken
# only when nothing else is pending for them (fresh, then skipped; both on item_pending_claim).
# {gate} is a condition checked once, before anything is locked (see CLAIM_NEXT_ITEM): the
# first CTE, MATERIALIZED, evaluates it a single time for the statement and each candidate set
# reads its answer. Written into each candidate set's WHERE instead, it was evaluated once per
# set (three times a claim, each with its auth_user, group and client probes), and a claim and
# its close cost the server 1.19x (bench/claim_variants.py). The same snapshot answers all
# three either way, so nothing changes but the work.
# The claimed/reclaimed events (and a resumed event for a hold that ended) are written in the
# same statement (one round trip).
# Holds: a held row is in no index but item_held_until, so no claim can take it
# before hold_until; the first claim after it takes it, with no sweeper, exactly as an expired
# lease is found. Its deadline was already pushed back by the whole hold when it was put on
# hold (HOLD_ITEM), so nothing here touches due_at; the hold columns are cleared with the stamp.
# Hand-off: each candidate set passes over items whose excluded_reviewer_ids name
# the claimer (they decided earlier in the item's escalation chain, or abandoned it before it
# was moved), so the item goes to a second person; `<> ALL` of the empty list (every item
# that is not an escalation) is true. A trigger refuses such a lease anyway
# (reviewitem_handoff_guard).
_CLAIM = """
WITH gate AS MATERIALIZED (
    SELECT {gate} AS allowed
), expired AS MATERIALIZED (
    SELECT id, lease_owner_id AS previous_owner_id, NULL::timestamptz AS hold_ended
      FROM queue_app_reviewitem
     WHERE queue_id = %(queue_id)s AND state = 'leased' AND lease_expires < now()
       AND (lease_count < %(max_leases)s OR review_round > 0)  -- returned: cannot move
       AND %(owner_id)s <> ALL (excluded_reviewer_ids)  -- hand-off
       AND (SELECT allowed FROM gate)
     ORDER BY lease_expires
     LIMIT {limit}
       FOR UPDATE SKIP LOCKED
), resumed AS MATERIALIZED (
    -- Holds whose time has come, soonest back first (item_held_until). No lease_count filter:
    -- a hold is not abandonment, and the escalation sweep never takes held rows.
    SELECT id, previous_owner_id, hold_ended FROM (
        SELECT id, NULL::bigint AS previous_owner_id, hold_until AS hold_ended
          FROM queue_app_reviewitem
         WHERE queue_id = %(queue_id)s AND state = 'held' AND hold_until <= now()
           AND %(owner_id)s <> ALL (excluded_reviewer_ids)  -- hand-off
           AND (SELECT allowed FROM gate)
         ORDER BY hold_until
         LIMIT {limit} - (SELECT count(*) FROM expired)
           FOR UPDATE SKIP LOCKED
    ) AS due_holds
    LIMIT {limit}
), fresh AS MATERIALIZED (
    -- The outer LIMIT changes nothing but the planner's estimate: without it the UPDATE below
    -- is planned for "10%% of the pending rows" and joins them by a sequential scan.
    -- Rows this claimer released within the queue's release_skip are passed over here: a
    -- release means "not me, not now", so others get them first (see skipped, below).
    -- Order = item_pending_claim's: priority, earliest deadline (NULL last), age.
    SELECT id, previous_owner_id, NULL::timestamptz AS hold_ended FROM (
        SELECT id, NULL::bigint AS previous_owner_id
          FROM queue_app_reviewitem
         WHERE queue_id = %(queue_id)s AND state = 'pending'
           AND (lease_count < %(max_leases)s OR review_round > 0)  -- returned: cannot move
           AND %(owner_id)s <> ALL (excluded_reviewer_ids)  -- hand-off
           AND (released_by_id IS DISTINCT FROM %(owner_id)s
                OR released_at <= now() - %(release_skip)s::interval)
           AND (SELECT allowed FROM gate)
         ORDER BY priority DESC, due_at, created_at
         LIMIT {limit} - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
           FOR UPDATE SKIP LOCKED
    ) AS unclaimed
    LIMIT {limit}
), skipped AS MATERIALIZED (
    -- The claimer's own recent releases, only when nothing else was found: LIMIT 0 (the usual
    -- case) returns before the index is read at all. Same partial index, same order.
    SELECT id, previous_owner_id, NULL::timestamptz AS hold_ended FROM (
        SELECT id, NULL::bigint AS previous_owner_id
          FROM queue_app_reviewitem
         WHERE queue_id = %(queue_id)s AND state = 'pending'
           AND (lease_count < %(max_leases)s OR review_round > 0)  -- returned: cannot move
           AND %(owner_id)s <> ALL (excluded_reviewer_ids)  -- hand-off
           AND released_by_id = %(owner_id)s AND released_at > now() - %(release_skip)s::interval
           AND (SELECT allowed FROM gate)
         ORDER BY priority DESC, due_at, created_at
         LIMIT {limit} - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
               - (SELECT count(*) FROM fresh)
           FOR UPDATE SKIP LOCKED
    ) AS released_by_me
    LIMIT {limit}
), picked AS (
    SELECT id, previous_owner_id, hold_ended FROM expired
    UNION ALL
    SELECT id, previous_owner_id, hold_ended FROM resumed
    UNION ALL
    SELECT id, previous_owner_id, hold_ended FROM fresh
    UNION ALL
    SELECT id, previous_owner_id, hold_ended FROM skipped
), claimed AS (
    UPDATE queue_app_reviewitem AS i
       SET state = 'leased',
           lease_owner_id = %(owner_id)s,
           lease_token = gen_random_uuid(),
           lease_expires = now() + %(ttl)s,
           lease_count = i.lease_count + 1,
           hold_until = NULL, held_at = NULL, hold_reason_id = NULL
      FROM picked
     WHERE i.id = picked.id AND i.queue_id = %(queue_id)s  -- one shard (docs/scaling.md)
 RETURNING i.*, picked.previous_owner_id, picked.hold_ended
), events AS (
    -- A hold that ended is recorded as resumed (back at hold_until, by no one) before the claim.
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'resumed', NULL::integer, now(),
           jsonb_build_object('cause', 'hold_ended', 'back_at', hold_ended, 'due_at', due_at)
      FROM claimed WHERE hold_ended IS NOT NULL
    UNION ALL
    SELECT id,
           CASE WHEN previous_owner_id IS NULL THEN 'claimed' ELSE 'reclaimed' END,
           %(owner_id)s, now(),
           jsonb_build_object('lease_count', lease_count, 'lease_expires', lease_expires,
                              'previous_owner_id', previous_owner_id)
      FROM claimed
)
SELECT {returning} FROM claimed ORDER BY priority DESC, due_at, created_at
"""

# What a claim returns to a caller that opens the item's page next (the console): the page reads
# the item itself, so only its id and what the claim's log line names. The whole row (32
# columns, the payload parsed) cost the console's decide about 0.2 ms of client CPU to load.
_CLAIMED_FOR_PAGE = "id, trace_id, lease_count"

# A batch for an automated worker (the API): up to %(limit)s items, and none unless the worker
# may review the queue as the statement runs (the API's earlier checks read a client loaded
# when the request began; a revocation or a scope taken away since must stop this claim).
CLAIM_ITEMS = _CLAIM.format(
    limit="%(limit)s", gate=_MAY_REVIEW.format(queue="%(queue_id)s"), returning="*"
)

# A reviewer's Next item: one item, and only if the reviewer may review the queue and holds no
# live lease in it. Sent right after RENEW_OWN_LIVE_LEASE under the reviewer's claim lock, it
# claims only when there was nothing to renew, so the two (and the COMMIT) travel together and
# no Python decision is needed between them. The limit is written into the text, so that the
# plan the server caches for the prepared statement (runner.run_together) is made for one row.
_NEXT_ITEM_GATE = """NOT EXISTS (
                SELECT 1 FROM queue_app_reviewitem
                 WHERE queue_id = %(queue_id)s AND state = 'leased'
                   AND lease_owner_id = %(owner_id)s AND lease_expires > now())
           AND """ + _MAY_REVIEW.format(queue="%(queue_id)s")

CLAIM_NEXT_ITEM = _CLAIM.format(limit="1", gate=_NEXT_ITEM_GATE, returning="*")

RENEW_OWN_LIVE_LEASE = _RENEW_OWN_LIVE_LEASE.format(returning="i.*")

# The same two for the console, which opens the item's page next (_CLAIMED_FOR_PAGE).
CLAIM_NEXT_ITEM_FOR_PAGE = _CLAIM.format(
    limit="1", gate=_NEXT_ITEM_GATE, returning=_CLAIMED_FOR_PAGE
)

RENEW_OWN_LIVE_LEASE_FOR_PAGE = _RENEW_OWN_LIVE_LEASE.format(
    returning=", ".join(f"i.{column}" for column in _CLAIMED_FOR_PAGE.split(", "))
)

# Extend a lease, fenced by its token: a tab whose lease was taken over renews nothing.
# A lapsed lease that nobody re-claimed is still the holder's (no one else can have it).
# Nor does a holder who may no longer review the queue: renewing would keep from everyone else
# an item they cannot decide. (Releasing needs no access: giving work back is always allowed.)
RENEW_LEASE = (
    """
WITH renewed AS (
    UPDATE queue_app_reviewitem
       SET lease_expires = now() + %(ttl)s
     WHERE id = %(item_id)s AND queue_id = %(queue_id)s AND state = 'leased'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
       AND """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """
 RETURNING id, lease_expires
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'renewed', %(owner_id)s, now(), jsonb_build_object('lease_expires', lease_expires)
      FROM renewed
)
SELECT lease_expires FROM renewed
"""
)

# Give a leased item back to the queue, fenced by its token. Who released it and when are
# kept on the row: the releaser's next claims pass it over for the queue's release_skip.
RELEASE_LEASE = """
WITH released AS (
    UPDATE queue_app_reviewitem
       SET state = 'pending', lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL,
           released_by_id = %(owner_id)s, released_at = now()
     WHERE id = %(item_id)s AND queue_id = %(queue_id)s AND state = 'leased'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
 RETURNING id
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'released', %(owner_id)s, now(), '{}'::jsonb FROM released
)
SELECT id FROM released
"""

# Move abandoned items (leased escalation_threshold times without a decision, and not under a
# live lease) to their queue's escalation queue, at higher priority, lease cleared. A late
# submit on the old token then fails the fenced close. SKIP LOCKED: an item a claimer is
# stamping right now is left for the next sweep rather than waited on.
# Hand-off: everyone who held the item (its claimed/reclaimed events, through the
# item foreign key's index) joins its excluded_reviewer_ids, so none of them gets it again in
# the escalation queue; the event names them for the item page.
ESCALATE_ABANDONED = """
WITH candidates AS MATERIALIZED (
    SELECT i.id, i.queue_id AS from_queue_id, q.escalation_queue_id AS to_queue_id,
           i.lease_count, i.lease_owner_id AS last_owner_id,
           ARRAY(SELECT DISTINCT e.actor_id FROM queue_app_itemevent AS e
                  WHERE e.item_id = i.id AND e.kind IN ('claimed', 'reclaimed')
                    AND e.actor_id IS NOT NULL ORDER BY e.actor_id) AS abandoned_by
      FROM queue_app_reviewitem AS i
      JOIN queue_app_queue AS q ON q.id = i.queue_id
     WHERE q.escalation_queue_id IS NOT NULL
       AND i.lease_count >= q.escalation_threshold
       -- An item a checker returned (review_round > 0) has a decision in this queue, whose
       -- foreign key (decision_item_in_queue) pins the item's queue: moving it would fail the
       -- whole sweep. It stays, and the claim keeps taking it past the threshold (_CLAIM).
       AND i.review_round = 0
       AND (i.state = 'pending' OR (i.state = 'leased' AND i.lease_expires < now()))
     ORDER BY i.id
     LIMIT %(limit)s
       FOR UPDATE OF i SKIP LOCKED
), moved AS (
    UPDATE queue_app_reviewitem AS i
       SET queue_id = c.to_queue_id, priority = i.priority + 10, state = 'pending',
           lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL, lease_count = 0,
           excluded_reviewer_ids = ARRAY(
               SELECT DISTINCT u FROM unnest(i.excluded_reviewer_ids || c.abandoned_by) AS u
                ORDER BY u)
      FROM candidates AS c
     WHERE i.id = c.id
 RETURNING i.id, i.trace_id, c.from_queue_id, c.to_queue_id, c.lease_count, c.last_owner_id,
           c.abandoned_by
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'auto_escalated', NULL, now(),
           jsonb_build_object('from_queue_id', from_queue_id, 'to_queue_id', to_queue_id,
                              'lease_count', lease_count, 'last_owner_id', last_owner_id,
                              'abandoned_by', to_jsonb(abandoned_by))
      FROM moved
)
SELECT * FROM moved
"""
