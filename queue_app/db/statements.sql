-- Every named statement Review Console runs, as sent to PostgreSQL (psycopg's %(name)s
-- placeholders; %% is a literal %). Written by `make sql` from queue_app/db/statements/:
-- edit the Python, not this file.

-- ===============================================================================================
-- access: Who may do what: queue access, evidence intake, held permissions, and session timeouts.

-- name: SET_LOCAL_TIMEOUTS
-- Bound lock waits and statement time for the rest of the transaction.
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true);

-- name: MAY_REVIEW_QUEUE
-- Whether a user may review a queue (claim, renew, hold and decide its items).
SELECT (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS allowed;

-- name: MAY_SEND_EVIDENCE
-- Whether a user may send evidence (items, payloads, attachments) to a queue.
SELECT NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = %(owner_id)s)
    OR (EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
        AND EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_intake)) AS allowed;

-- name: HOLD_PERMISSION
-- Whether a user holds a Django permission, its granting rows locked FOR SHARE.
WITH actor AS MATERIALIZED (
    SELECT u.id, u.is_superuser FROM auth_user AS u
     WHERE u.id = %(user_id)s AND u.is_active
       FOR SHARE
), wanted AS MATERIALIZED (
    SELECT p.id FROM auth_permission AS p
      JOIN django_content_type AS ct ON ct.id = p.content_type_id
     WHERE ct.app_label = %(app_label)s AND p.codename = %(codename)s
), direct AS MATERIALIZED (
    SELECT up.id FROM auth_user_user_permissions AS up
     WHERE up.user_id IN (SELECT id FROM actor) AND up.permission_id IN (SELECT id FROM wanted)
     LIMIT 1
       FOR SHARE
), via_group AS MATERIALIZED (
    SELECT gp.id FROM auth_user_groups AS ug
      JOIN auth_group_permissions AS gp ON gp.group_id = ug.group_id
     WHERE ug.user_id IN (SELECT id FROM actor) AND gp.permission_id IN (SELECT id FROM wanted)
     LIMIT 1
       FOR SHARE OF ug, gp
)
SELECT coalesce((SELECT a.is_superuser FROM actor AS a), false)
    OR EXISTS (SELECT 1 FROM direct)
    OR EXISTS (SELECT 1 FROM via_group) AS held;

-- name: SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE
-- Timeouts, a reviewer's claim lock in a queue, and whether they may review it.
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true),
       pg_advisory_xact_lock(%(queue_id)s::int, %(owner_id)s::int),
       (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS allowed;

-- name: SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS
-- Timeouts for a fenced write, and whether the user may still review the queue.
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true),
       (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS allowed;

-- ===============================================================================================
-- leases: Claiming, renewing and releasing review items, and escalating abandoned ones.

-- name: CLAIM_ITEMS
-- Claim a batch of items for an automated worker that may review the queue.
WITH gate AS MATERIALIZED (
    SELECT (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS allowed
), expired AS MATERIALIZED (
    SELECT id, lease_owner_id AS previous_owner_id, NULL::timestamptz AS hold_ended
      FROM queue_app_reviewitem
     WHERE queue_id = %(queue_id)s AND state = 'leased' AND lease_expires < now()
       AND (lease_count < %(max_leases)s OR review_round > 0)  -- returned: cannot move
       AND %(owner_id)s <> ALL (excluded_reviewer_ids)  -- hand-off
       AND (SELECT allowed FROM gate)
     ORDER BY lease_expires
     LIMIT %(limit)s
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
         LIMIT %(limit)s - (SELECT count(*) FROM expired)
           FOR UPDATE SKIP LOCKED
    ) AS due_holds
    LIMIT %(limit)s
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
         LIMIT %(limit)s - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
           FOR UPDATE SKIP LOCKED
    ) AS unclaimed
    LIMIT %(limit)s
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
         LIMIT %(limit)s - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
               - (SELECT count(*) FROM fresh)
           FOR UPDATE SKIP LOCKED
    ) AS released_by_me
    LIMIT %(limit)s
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
SELECT * FROM claimed ORDER BY priority DESC, due_at, created_at;

-- name: CLAIM_NEXT_ITEM
-- A reviewer's Next item: claim one, unless they hold a live lease in the queue.
WITH gate AS MATERIALIZED (
    SELECT NOT EXISTS (
                SELECT 1 FROM queue_app_reviewitem
                 WHERE queue_id = %(queue_id)s AND state = 'leased'
                   AND lease_owner_id = %(owner_id)s AND lease_expires > now())
           AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS allowed
), expired AS MATERIALIZED (
    SELECT id, lease_owner_id AS previous_owner_id, NULL::timestamptz AS hold_ended
      FROM queue_app_reviewitem
     WHERE queue_id = %(queue_id)s AND state = 'leased' AND lease_expires < now()
       AND (lease_count < %(max_leases)s OR review_round > 0)  -- returned: cannot move
       AND %(owner_id)s <> ALL (excluded_reviewer_ids)  -- hand-off
       AND (SELECT allowed FROM gate)
     ORDER BY lease_expires
     LIMIT 1
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
         LIMIT 1 - (SELECT count(*) FROM expired)
           FOR UPDATE SKIP LOCKED
    ) AS due_holds
    LIMIT 1
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
         LIMIT 1 - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
           FOR UPDATE SKIP LOCKED
    ) AS unclaimed
    LIMIT 1
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
         LIMIT 1 - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
               - (SELECT count(*) FROM fresh)
           FOR UPDATE SKIP LOCKED
    ) AS released_by_me
    LIMIT 1
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
SELECT * FROM claimed ORDER BY priority DESC, due_at, created_at;

-- name: RENEW_OWN_LIVE_LEASE
-- Renew and return the reviewer's own live lease in the queue, if any.
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
   AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
)
RETURNING i.*;

-- name: CLAIM_NEXT_ITEM_FOR_PAGE
-- CLAIM_NEXT_ITEM returning only what the console's item page needs.
WITH gate AS MATERIALIZED (
    SELECT NOT EXISTS (
                SELECT 1 FROM queue_app_reviewitem
                 WHERE queue_id = %(queue_id)s AND state = 'leased'
                   AND lease_owner_id = %(owner_id)s AND lease_expires > now())
           AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS allowed
), expired AS MATERIALIZED (
    SELECT id, lease_owner_id AS previous_owner_id, NULL::timestamptz AS hold_ended
      FROM queue_app_reviewitem
     WHERE queue_id = %(queue_id)s AND state = 'leased' AND lease_expires < now()
       AND (lease_count < %(max_leases)s OR review_round > 0)  -- returned: cannot move
       AND %(owner_id)s <> ALL (excluded_reviewer_ids)  -- hand-off
       AND (SELECT allowed FROM gate)
     ORDER BY lease_expires
     LIMIT 1
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
         LIMIT 1 - (SELECT count(*) FROM expired)
           FOR UPDATE SKIP LOCKED
    ) AS due_holds
    LIMIT 1
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
         LIMIT 1 - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
           FOR UPDATE SKIP LOCKED
    ) AS unclaimed
    LIMIT 1
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
         LIMIT 1 - (SELECT count(*) FROM expired) - (SELECT count(*) FROM resumed)
               - (SELECT count(*) FROM fresh)
           FOR UPDATE SKIP LOCKED
    ) AS released_by_me
    LIMIT 1
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
SELECT id, trace_id, lease_count FROM claimed ORDER BY priority DESC, due_at, created_at;

-- name: RENEW_OWN_LIVE_LEASE_FOR_PAGE
-- RENEW_OWN_LIVE_LEASE returning only what the console's item page needs.
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
   AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
)
RETURNING i.id, i.trace_id, i.lease_count;

-- name: RENEW_LEASE
-- Extend a lease, fenced by its token, if the holder may still review the queue.
WITH renewed AS (
    UPDATE queue_app_reviewitem
       SET lease_expires = now() + %(ttl)s
     WHERE id = %(item_id)s AND queue_id = %(queue_id)s AND state = 'leased'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
       AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
)
 RETURNING id, lease_expires
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'renewed', %(owner_id)s, now(), jsonb_build_object('lease_expires', lease_expires)
      FROM renewed
)
SELECT lease_expires FROM renewed;

-- name: RELEASE_LEASE
-- Give a leased item back to the queue, fenced by its token.
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
SELECT id FROM released;

-- name: ESCALATE_ABANDONED
-- Move abandoned items to their queue's escalation queue.
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
SELECT * FROM moved;

-- ===============================================================================================
-- decisions: The decide: the fenced close and the insert of a decision with its outbox row.

-- name: CLOSE_ITEM
-- The fenced close alone, for the benchmark's step-by-step replay of a decide.
UPDATE queue_app_reviewitem AS i
   SET state = 'decided', decided_at = now(),
       lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL
  FROM queue_app_queue AS q
 WHERE i.id = %(item_id)s AND i.queue_id = %(queue_id)s AND i.state = 'leased'
   AND i.lease_token = %(lease_token)s AND i.lease_owner_id = %(owner_id)s
   AND q.id = i.queue_id
RETURNING i.id, i.queue_id, i.subject, i.payload, i.attachments,
          q.slug AS queue_slug, q.escalation_queue_id,
          -- Second-person controls (queue_app/services/lanes.py): the queue's QA rate and its
          -- maker-checker policies, so deciding whether the decision needs a check costs no
          -- extra round trip. A handful of rows at most, by the policy's queue index.
          q.qa_rate,
          (SELECT coalesce(jsonb_agg(jsonb_build_object(
                      'verdict', p.verdict, 'path', p.path, 'threshold', p.threshold::text)),
                   '[]'::jsonb)
             FROM queue_app_checkpolicy AS p WHERE p.queue_id = i.queue_id) AS check_policies,
          -- The queue's evidence rules, for the decide to refuse one that warns unless the
          -- reviewer said they read the warnings (rules.warnings_for). By the rule's queue.
          (SELECT coalesce(jsonb_agg(jsonb_build_object(
                      'path', e.path, 'test', e.test, 'value', e.value, 'message', e.message)
                      ORDER BY e.id),
                   '[]'::jsonb)
             FROM queue_app_evidencerule AS e WHERE e.queue_id = i.queue_id) AS evidence_rules;

-- name: INSERT_DECISION
-- Record an overturn with its outbox row, event and lane task.
WITH awaiting AS (
    UPDATE queue_app_reviewitem SET state = 'awaiting_check'
     WHERE id = %(item_id)s AND queue_id = %(queue_id)s AND %(needs_check)s
 RETURNING due_at
), src AS (
    SELECT %(item_id)s::bigint AS item_id, %(queue_id)s::bigint AS queue_id,
           %(needs_check)s::boolean AS needs_check, %(qa_sampled)s::boolean AS qa_sampled,
           (SELECT due_at FROM awaiting) AS due_at
), decision AS (
    INSERT INTO queue_app_decision
           (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
            supersedes_id, corrected_verdict, lease_token, created_at, chain_hash,
            suggestion_view, suggestion_shown_at)
    SELECT src.item_id, src.queue_id, %(reviewer_id)s, %(verdict)s::text,
           (SELECT r.id FROM queue_app_reasoncode AS r
             WHERE r.queue_id = %(queue_id)s AND r.verdict = %(verdict)s::text
               AND r.code = %(reason_code)s AND r.retired_at IS NULL),
           %(evidence_hash)s, %(note)s, %(supersedes_id)s, %(corrected_verdict)s,
           %(lease_token)s, now(), '',
           %(suggestion_view)s::text, %(suggestion_shown_at)s::timestamptz
      FROM src
 RETURNING *
), job AS (
    -- A decision that needs a check gets its effect job only when a checker confirms it
    -- (lanes_sql.CONFIRM_CHECK).
    INSERT INTO queue_app_effectjob
           (decision_id, queue_id, created_at, attempts, next_attempt_at, last_error, dead)
    SELECT decision.id, decision.queue_id, now(), 0, now(), '', false
      FROM decision, src WHERE NOT src.needs_check
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT decision.item_id, 'decided', decision.reviewer_id, now(),
           jsonb_build_object('decision_id', decision.id, 'verdict', decision.verdict,
                              'corrected_verdict', decision.corrected_verdict,
                              'awaiting_check', src.needs_check)
      FROM decision, src
), lane AS (
    -- Second-person controls: the check (or, for a decision drawn for QA, the QA review)
    -- joins its lane. The lane task's foreign key ties it to this decision's item, queue and
    -- maker at statement end. A check carries its item's deadline (the claim serves the most
    -- urgent first); a QA task's is NULL (the item is final).
    INSERT INTO queue_app_lanetask
           (kind, queue_id, item_id, decision_id, maker_id, state, lease_count, due_at,
            created_at)
    SELECT CASE WHEN src.needs_check THEN 'check' ELSE 'qa' END,
           decision.queue_id, decision.item_id, decision.id, decision.reviewer_id, 'open', 0,
           src.due_at, now()
      FROM decision, src WHERE src.needs_check OR src.qa_sampled
)
-- The reason code comes back with the decision (Decision.objects.insert puts it in the
-- decision's cache): the console's "Recorded ..." message and the API's answer name it
-- without another query. So do whether it awaits its check and the queue's slug.
SELECT decision.*, src.needs_check AS awaiting_check,
       r.id AS reason__id, r.queue_id AS reason__queue_id, r.verdict AS reason__verdict,
       r.code AS reason__code, r.label AS reason__label, r.retired_at AS reason__retired_at,
       r.is_default AS reason__is_default
  FROM decision JOIN queue_app_reasoncode AS r ON r.id = decision.reason_code_id, src;

-- name: CLOSE_AND_RECORD_DECISION
-- The whole decide in one statement: every rule of the fence, the close and the record.
WITH src AS (
    UPDATE queue_app_reviewitem AS i
       SET state = CASE WHEN queue_app_check_needed(q.id, %(verdict)s::text, i.payload)
                        THEN 'awaiting_check' ELSE 'decided' END,
           decided_at = now(),
           lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL
      FROM queue_app_queue AS q
     WHERE i.id = %(item_id)s AND i.queue_id = %(queue_id)s AND i.state = 'leased'
       AND i.lease_token = %(lease_token)s AND i.lease_owner_id = %(owner_id)s
       AND i.evidence_hash = %(evidence_hash)s
       AND q.id = i.queue_id
       AND (%(verdict)s::text <> 'escalate' OR q.escalation_queue_id IS NOT NULL)
       AND (%(warnings_seen)s::boolean
            OR NOT EXISTS (SELECT 1 FROM queue_app_evidence_warnings(q.id, i.payload,
                                                                      %(time_zone)s::text)))
       AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
)
 RETURNING i.id AS item_id, i.queue_id, i.state = 'awaiting_check' AS needs_check,
           (i.state = 'decided'
            AND %(qa_draw)s::numeric * 10000 < q.qa_rate * 100 * 18446744073709551616)
           IS TRUE AS qa_sampled,
           CASE WHEN i.state = 'awaiting_check' THEN i.due_at END AS due_at,
           q.slug AS queue_slug, q.name AS queue_name, q.lease_ttl AS queue_lease_ttl,
           q.release_skip AS queue_release_skip,
           q.escalation_threshold AS queue_escalation_threshold,
           q.escalation_queue_id AS queue_escalation_queue_id
), decision AS (
    INSERT INTO queue_app_decision
           (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
            supersedes_id, corrected_verdict, lease_token, created_at, chain_hash,
            suggestion_view, suggestion_shown_at)
    SELECT src.item_id, src.queue_id, %(reviewer_id)s, %(verdict)s::text,
           (SELECT r.id FROM queue_app_reasoncode AS r
             WHERE r.queue_id = %(queue_id)s AND r.verdict = %(verdict)s::text
               AND r.code = %(reason_code)s AND r.retired_at IS NULL),
           %(evidence_hash)s, %(note)s, %(supersedes_id)s, %(corrected_verdict)s,
           %(lease_token)s, now(), '',
           %(suggestion_view)s::text, %(suggestion_shown_at)s::timestamptz
      FROM src
 RETURNING *
), job AS (
    -- A decision that needs a check gets its effect job only when a checker confirms it
    -- (lanes_sql.CONFIRM_CHECK).
    INSERT INTO queue_app_effectjob
           (decision_id, queue_id, created_at, attempts, next_attempt_at, last_error, dead)
    SELECT decision.id, decision.queue_id, now(), 0, now(), '', false
      FROM decision, src WHERE NOT src.needs_check
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT decision.item_id, 'decided', decision.reviewer_id, now(),
           jsonb_build_object('decision_id', decision.id, 'verdict', decision.verdict,
                              'corrected_verdict', decision.corrected_verdict,
                              'awaiting_check', src.needs_check)
      FROM decision, src
), lane AS (
    -- Second-person controls: the check (or, for a decision drawn for QA, the QA review)
    -- joins its lane. The lane task's foreign key ties it to this decision's item, queue and
    -- maker at statement end. A check carries its item's deadline (the claim serves the most
    -- urgent first); a QA task's is NULL (the item is final).
    INSERT INTO queue_app_lanetask
           (kind, queue_id, item_id, decision_id, maker_id, state, lease_count, due_at,
            created_at)
    SELECT CASE WHEN src.needs_check THEN 'check' ELSE 'qa' END,
           decision.queue_id, decision.item_id, decision.id, decision.reviewer_id, 'open', 0,
           src.due_at, now()
      FROM decision, src WHERE src.needs_check OR src.qa_sampled
)
-- The reason code comes back with the decision (Decision.objects.insert puts it in the
-- decision's cache): the console's "Recorded ..." message and the API's answer name it
-- without another query. So do whether it awaits its check and the queue's slug.
SELECT decision.*, src.needs_check AS awaiting_check, src.queue_slug,
       src.queue_id AS queue__id, src.queue_slug AS queue__slug, src.queue_name AS queue__name,
       src.queue_lease_ttl AS queue__lease_ttl, src.queue_release_skip AS queue__release_skip,
       src.queue_escalation_threshold AS queue__escalation_threshold,
       src.queue_escalation_queue_id AS queue__escalation_queue_id,
       r.id AS reason__id, r.queue_id AS reason__queue_id, r.verdict AS reason__verdict,
       r.code AS reason__code, r.label AS reason__label, r.retired_at AS reason__retired_at,
       r.is_default AS reason__is_default
  FROM decision JOIN queue_app_reasoncode AS r ON r.id = decision.reason_code_id, src;

-- name: EXPLAIN_REFUSED_DECISION
-- Read, after a refused decide, which of its conditions failed.
SELECT i.id = %(item_id)s AND i.queue_id = %(queue_id)s AND i.state = 'leased'
       AND i.lease_token = %(lease_token)s AND i.lease_owner_id = %(owner_id)s AS holds_lease,
       (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS allowed,
       i.evidence_hash IS NOT DISTINCT FROM %(evidence_hash)s AS same_evidence,
       (%(verdict)s::text <> 'escalate' OR q.escalation_queue_id IS NOT NULL) AS may_escalate,
       EXISTS (SELECT 1 FROM queue_app_evidence_warnings(q.id, i.payload, %(time_zone)s::text))
           AS warns
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
 WHERE i.id = %(item_id)s;

-- ===============================================================================================
-- holds: Putting an item on hold and bringing it back; the deadline pauses while it is held.

-- name: HOLD_ITEM
-- Put a leased item on hold, fenced by its token, pushing its deadline back.
WITH held AS (
    UPDATE queue_app_reviewitem AS i
       SET state = 'held',
           lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL,
           hold_until = %(hold_until)s, held_at = now(),
           hold_reason_id = (SELECT r.id FROM queue_app_holdreason AS r
                              WHERE r.queue_id = i.queue_id AND r.code = %(reason_code)s
                                AND r.retired_at IS NULL),
           due_at = i.due_at + (%(hold_until)s::timestamptz - now()),
           lease_count = greatest(i.lease_count - 1, 0)
      FROM queue_app_queue AS q
     WHERE i.id = %(item_id)s AND i.state = 'leased'
       AND i.lease_token = %(lease_token)s AND i.lease_owner_id = %(owner_id)s
       AND q.id = i.queue_id
       AND %(hold_until)s::timestamptz > now()
       AND %(hold_until)s::timestamptz - now() <= q.max_hold
       AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = i.queue_id AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = i.queue_id AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
)
 RETURNING i.id, i.hold_until, i.held_at, i.due_at, i.hold_reason_id
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'held', %(owner_id)s, now(),
           jsonb_build_object('reason_code', %(reason_code)s::text, 'hold_until', hold_until,
                              'due_at_before', due_at - (hold_until - held_at),
                              'due_at', due_at, 'lease_token', %(lease_token)s::text)
      FROM held
)
SELECT * FROM held;

-- name: RESUME_HELD_ITEM
-- Bring a held item back to the queue now, giving back the unused hold time.
WITH resumed AS (
    UPDATE queue_app_reviewitem AS i
       SET state = 'pending',
           due_at = i.due_at - greatest(i.hold_until - now(), interval '0'),
           hold_until = NULL, held_at = NULL, hold_reason_id = NULL
      FROM queue_app_reviewitem AS old
     WHERE i.id = %(item_id)s AND i.state = 'held' AND old.id = i.id
 RETURNING i.id, i.due_at, old.due_at AS due_at_before, old.hold_until, old.held_at
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'resumed', %(actor_id)s, now(),
           jsonb_build_object('cause', %(cause)s::text, 'hold_until', hold_until,
                              'due_at_before', due_at_before, 'due_at', due_at)
      FROM resumed
)
SELECT * FROM resumed;

-- ===============================================================================================
-- items: The console's item page: the item, its queue and access, and what the page shows.

-- name: SUBJECT_HISTORY
-- The subject's other items the viewer may read, each with its standing decision.
SELECT i.id, i.state, i.subject, i.created_at, i.decided_at, i.due_at, i.queue_id,
       q.slug AS queue_slug, q.name AS queue_name,
       st.standing_outcome AS verdict, r.code AS reason_code, r.label AS reason_label,
       coalesce(d.reviewer_username, u.username) AS reviewer, d.created_at AS decided_on
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
  JOIN queue_app_itemstory AS st ON st.item_id = i.id
  LEFT JOIN queue_app_decision AS d ON d.id = st.standing_decision_id
  LEFT JOIN queue_app_reasoncode AS r ON r.id = d.reason_code_id
  LEFT JOIN auth_user AS u ON u.id = d.reviewer_id
 WHERE i.subject_key = %(subject_key)s AND i.id <> %(exclude_id)s
   AND (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = i.queue_id AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = i.queue_id AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND true)
  )
)
 ORDER BY i.created_at DESC
 LIMIT %(limit)s;

-- name: ITEM_WITH_QUEUE_AND_ACCESS
-- An item, its queue, and whether the user may review that queue.
SELECT i.*, {queue_columns}, (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = i.queue_id AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = i.queue_id AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS may_review
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
 WHERE i.id = %(item_id)s;

-- name: QUEUE_BY_SLUG_WITH_ACCESS
-- A queue by its slug, and whether the user may review it.
SELECT q.*, (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = q.id AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = q.id AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS may_review
  FROM queue_app_queue AS q
 WHERE q.slug = %(slug)s;

-- name: QUEUE_OF_ITEM_WITH_ACCESS
-- The queue an item is in, and whether the user may review it.
SELECT q.*, (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = q.id AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = q.id AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) AS may_review
  FROM queue_app_queue AS q
 WHERE q.id = (SELECT queue_id FROM queue_app_reviewitem WHERE id = %(item_id)s);

-- name: ITEM_DECISIONS
-- An item's decisions oldest first, each with its status and its reviewer's name.
SELECT d.*, s.status AS story_status,
       u.id AS reviewer__id, u.username AS reviewer__username,
       u.first_name AS reviewer__first_name, u.last_name AS reviewer__last_name
  FROM queue_app_decision AS d
  JOIN queue_app_decisionstatus AS s ON s.decision_id = d.id
  LEFT JOIN auth_user AS u ON u.id = d.reviewer_id AND d.reviewer_username IS NULL
 WHERE d.item_id = %(item_id)s
 ORDER BY d.id;

-- name: PAGE_ITEM_RETURNS
-- The checkers' returns of an item's decisions, with their notes.
SELECT t.decision_id, o.actor_username, o.note, o.created_at
  FROM queue_app_lanetask AS t
  JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
 WHERE t.item_id = %(item_id)s AND t.kind = 'check' AND o.result = 'returned'
 ORDER BY t.decision_id;

-- name: PAGE_ITEM_LEASE_HOLDER
-- The name of whoever holds an item's lease.
SELECT u.id, u.username, u.first_name, u.last_name
  FROM auth_user AS u
 WHERE u.id = (SELECT pi.lease_owner_id FROM queue_app_reviewitem AS pi
                WHERE pi.id = %(item_id)s AND pi.state = 'leased');

-- name: PAGE_ITEM_REASON_CODES
-- The reason codes an item's page names: its queue's and its decisions'.
SELECT r.*
  FROM queue_app_reasoncode AS r
 WHERE r.queue_id = ANY (ARRAY(SELECT (SELECT pi.queue_id FROM queue_app_reviewitem AS pi WHERE pi.id = %(item_id)s)::bigint
                               UNION SELECT d.queue_id FROM queue_app_decision AS d
                                      WHERE d.item_id = %(item_id)s))
 ORDER BY r.verdict, r.label;

-- name: PAGE_ITEM_EVIDENCE_RULES
-- The evidence rules of an item's queue, in the page's order.
SELECT e.* FROM queue_app_evidencerule AS e WHERE e.queue_id = (SELECT pi.queue_id FROM queue_app_reviewitem AS pi WHERE pi.id = %(item_id)s) ORDER BY e.id;

-- name: PAGE_ITEM_HOLD_REASONS
-- The hold reasons a holder of an item may choose now, by label.
SELECT h.* FROM queue_app_holdreason AS h
 WHERE h.queue_id = (SELECT pi.queue_id FROM queue_app_reviewitem AS pi WHERE pi.id = %(item_id)s) AND h.retired_at IS NULL
 ORDER BY h.label;

-- ===============================================================================================
-- identity: Every signed-in request's reads: the session, its user, and their staff power.

-- name: SESSION_WITH_USER
-- A live session and the user it names, with whether they hold a staff power.
SELECT s.session_key, s.session_data, s.expire_date, s.user_id, {user_columns},
       (
       u.is_staff OR u.is_superuser
       OR EXISTS (SELECT 1 FROM auth_user_user_permissions AS up WHERE up.user_id = u.id)
       OR EXISTS (SELECT 1 FROM auth_user_groups AS ug
                    JOIN auth_group_permissions AS gp ON gp.group_id = ug.group_id
                   WHERE ug.user_id = u.id)) AS user__holds_power
  FROM queue_app_session AS s
  LEFT JOIN auth_user AS u ON u.id = s.user_id
 WHERE s.session_key = %(session_key)s AND s.expire_date > %(now)s;

-- name: USER_ROW
-- One user's row, with whether they hold a staff power.
SELECT u.*, (
       u.is_staff OR u.is_superuser
       OR EXISTS (SELECT 1 FROM auth_user_user_permissions AS up WHERE up.user_id = u.id)
       OR EXISTS (SELECT 1 FROM auth_user_groups AS ug
                    JOIN auth_group_permissions AS gp ON gp.group_id = ug.group_id
                   WHERE ug.user_id = u.id)) AS holds_power FROM auth_user AS u WHERE u.id = %(user_id)s;

-- name: USER_HOLDS_POWER
-- Whether one user holds a staff power.
SELECT (
       u.is_staff OR u.is_superuser
       OR EXISTS (SELECT 1 FROM auth_user_user_permissions AS up WHERE up.user_id = u.id)
       OR EXISTS (SELECT 1 FROM auth_user_groups AS ug
                    JOIN auth_group_permissions AS gp ON gp.group_id = ug.group_id
                   WHERE ug.user_id = u.id)) AS holds_power FROM auth_user AS u WHERE u.id = %(user_id)s;

-- ===============================================================================================
-- lanes: The statements of the second-person lanes (checks, QA reviews, adjudications), named.

-- name: CLAIM_LANE_TASK
-- Next check / QA / adjudication: renew one's own lease or claim the next task.
WITH me AS MATERIALIZED (
    SELECT queue_app_principal(%(owner_id)s) AS principal,
           (NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = %(owner_id)s)
     AND CASE WHEN %(kind)s::text IN ('adjudication', 'appeal') THEN EXISTS (
    SELECT 1 FROM auth_user AS u
     WHERE u.id = %(owner_id)s AND u.is_active
       AND (u.is_superuser OR EXISTS (
           SELECT 1 FROM auth_permission AS p
             JOIN django_content_type AS ct ON ct.id = p.content_type_id
            WHERE ct.app_label = 'queue_app' AND p.codename = 'can_overturn'
              AND (EXISTS (SELECT 1 FROM auth_user_user_permissions AS up
                            WHERE up.user_id = u.id AND up.permission_id = p.id)
                   OR EXISTS (SELECT 1 FROM auth_group_permissions AS gp
                                JOIN auth_user_groups AS ug ON ug.group_id = gp.group_id
                               WHERE ug.user_id = u.id AND gp.permission_id = p.id))))
)
              ELSE (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = %(queue_id)s AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = %(queue_id)s AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) END) AS allowed
), mine AS MATERIALIZED (
    SELECT t.id FROM queue_app_lanetask AS t
     WHERE t.lease_owner_id = %(owner_id)s AND t.queue_id = %(queue_id)s
       AND t.kind = %(kind)s::text AND t.state = 'open' AND t.lease_expires > now()
       AND (SELECT allowed FROM me)
     ORDER BY t.lease_expires DESC
     LIMIT 1
), picked AS MATERIALIZED (
    -- `me` is read through scalar subqueries (run once, before the scan), never joined, and
    -- the principal tests are wrapped in coalesce() so the planner cannot estimate them. A
    -- lane whose checks mostly come from one maker (an API client: machines decide, people
    -- confirm) made it estimate "no row passes `maker <> me`" and read and sort the whole
    -- lane instead of walking lanetask_open_due_claim in order (B9: 10x at 100,000 waiting).
    SELECT t.id FROM queue_app_lanetask AS t
     WHERE t.queue_id = %(queue_id)s AND t.kind = %(kind)s::text AND t.state = 'open'
       AND (t.lease_expires IS NULL OR t.lease_expires < now())
       AND coalesce(t.maker_principal_id <> (SELECT principal FROM me), true)
       AND coalesce(t.second_principal_id <> (SELECT principal FROM me), true)
       AND coalesce(t.checker_principal_id <> (SELECT principal FROM me), true)
       AND NOT queue_app_lane_barred(t, %(owner_id)s)
       AND (SELECT allowed FROM me)
       AND NOT EXISTS (SELECT 1 FROM mine)
     ORDER BY t.due_at, t.created_at, t.id
     LIMIT 1
       FOR UPDATE OF t SKIP LOCKED
), target AS (
    SELECT id, true AS renewed FROM mine
    UNION ALL
    SELECT id, false FROM picked
)
UPDATE queue_app_lanetask AS t
   SET lease_owner_id = %(owner_id)s,
       lease_token = CASE WHEN target.renewed THEN t.lease_token ELSE gen_random_uuid() END,
       lease_expires = now() + %(ttl)s,
       lease_count = t.lease_count + CASE WHEN target.renewed THEN 0 ELSE 1 END
  FROM target
 WHERE t.id = target.id AND t.queue_id = %(queue_id)s AND t.state = 'open'
   AND (CASE WHEN target.renewed
             THEN t.lease_owner_id = %(owner_id)s AND t.lease_expires > now()
             ELSE t.lease_expires IS NULL OR t.lease_expires < now() END)
RETURNING t.*, target.renewed;

-- name: RELEASE_LANE_TASK
-- Give a lane task back, fenced by its token.
UPDATE queue_app_lanetask
   SET lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL
 WHERE id = %(task_id)s AND queue_id = %(queue_id)s AND state = 'open'
   AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
RETURNING id;

-- name: RENEW_LANE_TASK
-- Extend a lane task's lease, fenced by its token, if the holder may still work it.
UPDATE queue_app_lanetask AS t
   SET lease_expires = now() + q.lease_ttl
  FROM queue_app_queue AS q
 WHERE t.id = %(task_id)s AND t.queue_id = %(queue_id)s AND q.id = t.queue_id
   AND t.state = 'open'
   AND t.lease_token = %(lease_token)s AND t.lease_owner_id = %(owner_id)s
   AND (NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = %(owner_id)s)
     AND CASE WHEN t.kind IN ('adjudication', 'appeal') THEN EXISTS (
    SELECT 1 FROM auth_user AS u
     WHERE u.id = %(owner_id)s AND u.is_active
       AND (u.is_superuser OR EXISTS (
           SELECT 1 FROM auth_permission AS p
             JOIN django_content_type AS ct ON ct.id = p.content_type_id
            WHERE ct.app_label = 'queue_app' AND p.codename = 'can_overturn'
              AND (EXISTS (SELECT 1 FROM auth_user_user_permissions AS up
                            WHERE up.user_id = u.id AND up.permission_id = p.id)
                   OR EXISTS (SELECT 1 FROM auth_group_permissions AS gp
                                JOIN auth_user_groups AS ug ON ug.group_id = gp.group_id
                               WHERE ug.user_id = u.id AND gp.permission_id = p.id))))
)
              ELSE (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = t.queue_id AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = t.queue_id AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) END)
RETURNING t.lease_expires;

-- name: LOCK_LANE_TASK
-- Lock a lane task and its item for a fenced finish, with what the finish checks.
SELECT t.id, t.kind, t.queue_id, t.item_id, t.decision_id, t.lease_token,
       i.state AS item_state, i.subject, i.payload, i.attachments, i.suggestion,
       d.verdict, d.reason_code_id, d.evidence_hash, d.lease_token AS decision_lease_token,
       d.reviewer_id AS maker_id, q.qa_rate,
       d.suggestion_view = 'automatic' IS TRUE AS automatic, q.auto_decide_qa_rate,
       (NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = %(owner_id)s)
     AND CASE WHEN t.kind IN ('adjudication', 'appeal') THEN EXISTS (
    SELECT 1 FROM auth_user AS u
     WHERE u.id = %(owner_id)s AND u.is_active
       AND (u.is_superuser OR EXISTS (
           SELECT 1 FROM auth_permission AS p
             JOIN django_content_type AS ct ON ct.id = p.content_type_id
            WHERE ct.app_label = 'queue_app' AND p.codename = 'can_overturn'
              AND (EXISTS (SELECT 1 FROM auth_user_user_permissions AS up
                            WHERE up.user_id = u.id AND up.permission_id = p.id)
                   OR EXISTS (SELECT 1 FROM auth_group_permissions AS gp
                                JOIN auth_user_groups AS ug ON ug.group_id = gp.group_id
                               WHERE ug.user_id = u.id AND gp.permission_id = p.id))))
)
              ELSE (
    EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = t.queue_id AND ug.user_id = %(owner_id)s)
    OR EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq
                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id
                WHERE cq.queue_id = t.queue_id AND c.user_id = %(owner_id)s
                  AND c.revoked_at IS NULL AND c.can_adjudicate)
  )
) END) AS allowed
  FROM queue_app_lanetask AS t
  JOIN queue_app_reviewitem AS i ON i.id = t.item_id
  JOIN queue_app_decision AS d ON d.id = t.decision_id
  JOIN queue_app_queue AS q ON q.id = t.queue_id
 WHERE t.id = %(task_id)s AND t.queue_id = %(queue_id)s AND t.kind = %(kind)s::text
   AND t.state = 'open'
   AND t.lease_token = %(lease_token)s AND t.lease_owner_id = %(owner_id)s
   AND i.queue_id = %(queue_id)s AND d.queue_id = %(queue_id)s
   FOR UPDATE OF t, i;

-- name: CONFIRM_CHECK
-- Confirm a check: outcome, effect job, item decided, QA draw and event.
WITH done AS (
    UPDATE queue_app_lanetask
       SET state = 'done', done_at = now()
     WHERE id = %(task_id)s AND queue_id = %(queue_id)s AND kind = %(kind)s::text
       AND state = 'open'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
 RETURNING *
), outcome AS (
    INSERT INTO queue_app_laneoutcome
           (task_id, kind, result, actor_id, actor_username, lease_token, verdict,
            reason_code_id, note, overturn_id, created_at)
    SELECT id, kind, %(result)s::text, %(owner_id)s, '', lease_token, %(verdict)s::text,
           NULL::bigint, %(note)s::text, %(overturn_id)s::bigint, now()
      FROM done
 RETURNING *
)
, job AS (
    INSERT INTO queue_app_effectjob
           (decision_id, queue_id, created_at, attempts, next_attempt_at, last_error, dead)
    SELECT decision_id, queue_id, now(), 0, now(), '', false FROM done
), item AS (
    -- A confirmed overturn's item was decided before: its outcome changes, its time does not.
    UPDATE queue_app_reviewitem AS i
       SET state = 'decided',
           decided_at = CASE WHEN %(is_overturn)s THEN i.decided_at ELSE now() END
      FROM done
     WHERE i.id = done.item_id AND i.queue_id = %(queue_id)s AND i.state = 'awaiting_check'
), qa AS (
    -- This statement's confirmation is invisible to the task's insert trigger: the checker
    -- (barred from the QA review) is named here.
    INSERT INTO queue_app_lanetask
           (kind, queue_id, item_id, decision_id, maker_id, state, lease_count,
            checker_principal_id, created_at)
    SELECT 'qa', done.queue_id, done.item_id, done.decision_id, done.maker_id, 'open', 0,
           queue_app_principal(%(owner_id)s), now()
      FROM done WHERE %(qa_sampled)s
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT item_id, 'check_confirmed', %(owner_id)s, now(),
           jsonb_build_object('decision_id', decision_id, 'task_id', id)
      FROM done
)
SELECT o.*, d.item_id, d.decision_id, d.queue_id
  FROM outcome AS o JOIN done AS d ON d.id = o.task_id;

-- name: RETURN_CHECK
-- Return a check: outcome, and the item back to pending in a new review round.
WITH done AS (
    UPDATE queue_app_lanetask
       SET state = 'done', done_at = now()
     WHERE id = %(task_id)s AND queue_id = %(queue_id)s AND kind = %(kind)s::text
       AND state = 'open'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
 RETURNING *
), outcome AS (
    INSERT INTO queue_app_laneoutcome
           (task_id, kind, result, actor_id, actor_username, lease_token, verdict,
            reason_code_id, note, overturn_id, created_at)
    SELECT id, kind, %(result)s::text, %(owner_id)s, '', lease_token, %(verdict)s::text,
           NULL::bigint, %(note)s::text, %(overturn_id)s::bigint, now()
      FROM done
 RETURNING *
)
, item AS (
    UPDATE queue_app_reviewitem AS i
       SET state = CASE WHEN %(is_overturn)s THEN 'decided' ELSE 'pending' END,
           decided_at = CASE WHEN %(is_overturn)s THEN i.decided_at END,
           review_round = i.review_round + CASE WHEN %(is_overturn)s THEN 0 ELSE 1 END,
           lease_count = CASE WHEN %(is_overturn)s THEN i.lease_count ELSE 0 END
      FROM done
     WHERE i.id = done.item_id AND i.queue_id = %(queue_id)s AND i.state = 'awaiting_check'
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT item_id, 'check_returned', %(owner_id)s, now(),
           jsonb_build_object('decision_id', decision_id, 'task_id', id,
                              'evidence_changed', %(evidence_changed)s::boolean)
      FROM done
)
SELECT o.*, d.item_id, d.decision_id, d.queue_id
  FROM outcome AS o JOIN done AS d ON d.id = o.task_id;

-- name: RECORD_QA_REVIEW
-- Record a blind QA review's verdict and reason.
WITH done AS (
    UPDATE queue_app_lanetask
       SET state = 'done', done_at = now()
     WHERE id = %(task_id)s AND queue_id = %(queue_id)s AND kind = %(kind)s::text
       AND state = 'open'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
 RETURNING *
), outcome AS (
    INSERT INTO queue_app_laneoutcome
           (task_id, kind, result, actor_id, actor_username, lease_token, verdict,
            reason_code_id, note, overturn_id, created_at)
    SELECT id, kind, %(result)s::text, %(owner_id)s, '', lease_token, %(verdict)s::text,
           (SELECT r.id FROM queue_app_reasoncode AS r
              WHERE r.queue_id = done.queue_id AND r.verdict = %(verdict)s::text
                AND r.code = %(reason_code)s AND r.retired_at IS NULL), %(note)s::text, %(overturn_id)s::bigint, now()
      FROM done
 RETURNING *
)
, adjudication AS (
    INSERT INTO queue_app_lanetask
           (kind, queue_id, item_id, decision_id, maker_id, source_id, second_id, state,
            lease_count, checker_principal_id, created_at)
    SELECT 'adjudication', done.queue_id, done.item_id, done.decision_id, done.maker_id,
           done.id, done.lease_owner_id, 'open', 0, done.checker_principal_id, now()
      FROM done JOIN outcome ON outcome.task_id = done.id
     WHERE NOT outcome.agrees_verdict
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT item_id, 'qa_reviewed', %(owner_id)s, now(),
           jsonb_build_object('decision_id', decision_id, 'task_id', id)
      FROM done
)
SELECT o.*, d.item_id, d.decision_id, d.queue_id
  FROM outcome AS o JOIN done AS d ON d.id = o.task_id;

-- name: FINISH_ADJUDICATION
-- Close an adjudication with its outcome.
WITH done AS (
    UPDATE queue_app_lanetask
       SET state = 'done', done_at = now()
     WHERE id = %(task_id)s AND queue_id = %(queue_id)s AND kind = %(kind)s::text
       AND state = 'open'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
 RETURNING *
), outcome AS (
    INSERT INTO queue_app_laneoutcome
           (task_id, kind, result, actor_id, actor_username, lease_token, verdict,
            reason_code_id, note, overturn_id, created_at)
    SELECT id, kind, %(result)s::text, %(owner_id)s, '', lease_token, %(verdict)s::text,
           NULL::bigint, %(note)s::text, %(overturn_id)s::bigint, now()
      FROM done
 RETURNING *
)
, events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT item_id, 'adjudicated', %(owner_id)s, now(),
           jsonb_build_object('decision_id', decision_id, 'task_id', id,
                              'result', %(result)s::text, 'overturn_id', %(overturn_id)s::bigint)
      FROM done
)
SELECT o.*, d.item_id, d.decision_id, d.queue_id
  FROM outcome AS o JOIN done AS d ON d.id = o.task_id;

-- name: FINISH_APPEAL
-- Decide an appeal: its outcome, the outcome notice's outbox row, the event.
WITH done AS (
    UPDATE queue_app_lanetask
       SET state = 'done', done_at = now()
     WHERE id = %(task_id)s AND queue_id = %(queue_id)s AND kind = %(kind)s::text
       AND state = 'open'
       AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
 RETURNING *
), outcome AS (
    INSERT INTO queue_app_laneoutcome
           (task_id, kind, result, actor_id, actor_username, lease_token, verdict,
            reason_code_id, note, overturn_id, created_at)
    SELECT id, kind, %(result)s::text, %(owner_id)s, '', lease_token, %(verdict)s::text,
           NULL::bigint, %(note)s::text, %(overturn_id)s::bigint, now()
      FROM done
 RETURNING *
)
, notice AS (
    INSERT INTO queue_app_appealnotice
           (appeal_id, created_at, attempts, next_attempt_at, last_error, dead, receipt)
    SELECT a.id, now(), 0, now(), '', false, '{}'::jsonb
      FROM done JOIN queue_app_appeal AS a ON a.task_id = done.id
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT item_id, 'appeal_decided', %(owner_id)s, now(),
           jsonb_build_object('decision_id', decision_id, 'task_id', id,
                              'result', %(result)s::text, 'overturn_id', %(overturn_id)s::bigint)
      FROM done
)
SELECT o.*, d.item_id, d.decision_id, d.queue_id
  FROM outcome AS o JOIN done AS d ON d.id = o.task_id;

-- name: LANES_FOR_USER
-- The console home's lanes for one user, with what waits in each.
WITH me AS MATERIALIZED (
    SELECT NOT EXISTS (SELECT 1 FROM queue_app_apiclient WHERE user_id = %(owner_id)s) AS human,
           queue_app_principal(%(owner_id)s) AS principal,
           EXISTS (
    SELECT 1 FROM auth_user AS u
     WHERE u.id = %(owner_id)s AND u.is_active
       AND (u.is_superuser OR EXISTS (
           SELECT 1 FROM auth_permission AS p
             JOIN django_content_type AS ct ON ct.id = p.content_type_id
            WHERE ct.app_label = 'queue_app' AND p.codename = 'can_overturn'
              AND (EXISTS (SELECT 1 FROM auth_user_user_permissions AS up
                            WHERE up.user_id = u.id AND up.permission_id = p.id)
                   OR EXISTS (SELECT 1 FROM auth_group_permissions AS gp
                                JOIN auth_user_groups AS ug ON ug.group_id = gp.group_id
                               WHERE ug.user_id = u.id AND gp.permission_id = p.id))))
) AS can_overturn
), acting AS MATERIALIZED (
    SELECT array_agg(id) AS ids FROM (
        SELECT principal AS id FROM me
        UNION ALL
        SELECT c.user_id FROM queue_app_apiclient AS c, me WHERE c.created_by_id = me.principal
    ) AS a
), parts AS MATERIALIZED (
    -- A LATERAL with LIMIT: probed per open task by the item indexes. As EXISTS the planner
    -- turns the test into a hashed subplan that reads every decision of the user again.
    SELECT DISTINCT t.item_id
      FROM queue_app_lanetask AS t
     CROSS JOIN acting AS a
     CROSS JOIN LATERAL (
        SELECT 1 FROM queue_app_decision AS d
         WHERE d.item_id = t.item_id AND d.reviewer_id = ANY(a.ids)
        UNION ALL
        SELECT 1 FROM queue_app_lanetask AS x
         WHERE x.item_id = t.item_id AND x.lease_owner_id = ANY(a.ids)
        LIMIT 1
     ) AS part
     WHERE t.state = 'open'
), lanes AS (
    SELECT q.id AS queue_id, q.slug, q.name, q.qa_rate, k.kind
      FROM queue_app_queue AS q
     CROSS JOIN (VALUES ('check'), ('qa'), ('adjudication'), ('appeal')) AS k (kind)
     CROSS JOIN me
     WHERE me.human
       AND ((k.kind IN ('check', 'qa') AND q.id = ANY(%(queue_ids)s::bigint[]))
            OR (k.kind IN ('adjudication', 'appeal') AND me.can_overturn))
)
SELECT l.queue_id, l.slug, l.name, l.kind,
       count(t.id) AS open,
       count(t.id) FILTER (WHERE t.lease_expires > now()) AS leased,
       min(t.created_at) AS oldest,
       CASE l.kind
            WHEN 'check' THEN EXISTS (SELECT 1 FROM queue_app_checkpolicy AS p
                                       WHERE p.queue_id = l.queue_id)
            WHEN 'qa' THEN l.qa_rate > 0
            ELSE false END AS configured
  FROM lanes AS l
  LEFT JOIN (queue_app_lanetask AS t LEFT JOIN parts AS p ON p.item_id = t.item_id)
         ON t.queue_id = l.queue_id AND t.kind = l.kind AND t.state = 'open'
        AND coalesce(t.maker_principal_id <> (SELECT principal FROM me), true)
       AND coalesce(t.second_principal_id <> (SELECT principal FROM me), true)
       AND coalesce(t.checker_principal_id <> (SELECT principal FROM me), true)
        AND (p.item_id IS NULL OR NOT queue_app_lane_barred(t, %(owner_id)s))
 GROUP BY l.queue_id, l.slug, l.name, l.qa_rate, l.kind
 ORDER BY l.name, array_position(ARRAY['check', 'qa', 'adjudication', 'appeal'], l.kind);

-- name: LANE_BACKLOG_NAMED
-- Open lane tasks per queue and lane, with the queue's name and the clock.
SELECT q.id AS queue_id, q.slug, q.name, t.kind, count(*) AS open,
       count(*) FILTER (WHERE t.lease_expires > now()) AS leased,
       min(t.created_at) AS oldest, now() AS now
  FROM queue_app_lanetask AS t JOIN queue_app_queue AS q ON q.id = t.queue_id
 WHERE t.state = 'open'
 GROUP BY q.id, q.slug, q.name, t.kind
 ORDER BY q.name, t.kind;

-- name: CHECKS_FINISHED
-- Checks finished in the window per queue, confirmed and returned.
WITH counts AS (
    SELECT c.queue_id, c.checks AS total,
           CASE WHEN c.result = 'returned' THEN c.checks ELSE 0 END AS returned
      FROM queue_app_checktally AS c
     WHERE c.day >= date_trunc('day', now() - %(window)s, 'UTC') + interval '1 day'
    UNION ALL
    SELECT t.queue_id, 1, CASE WHEN o.result = 'returned' THEN 1 ELSE 0 END
      FROM queue_app_laneoutcome AS o
     CROSS JOIN LATERAL (SELECT k.queue_id FROM queue_app_lanetask AS k
                          WHERE k.id = o.task_id LIMIT 1) AS t
     WHERE o.kind = 'check' AND o.created_at >= now() - %(window)s
       AND o.created_at < date_trunc('day', now() - %(window)s, 'UTC') + interval '1 day'
)
SELECT q.slug, sum(c.total)::bigint AS total, sum(c.returned)::bigint AS returned
  FROM counts AS c
  JOIN queue_app_queue AS q ON q.id = c.queue_id
 GROUP BY q.slug;

-- name: QA_REVIEWS_IN_WINDOW
-- Every QA review in the window with the decision it sampled.
SELECT q.id AS queue_id, q.slug, q.name AS queue_name, o.created_at AS reviewed_at,
       d.reviewer_id, coalesce(d.reviewer_username, u.username) AS reviewer_username,
       d.verdict AS first_verdict, o.verdict AS qa_verdict, o.agrees_verdict, o.agrees_reason
  FROM queue_app_laneoutcome AS o
  JOIN queue_app_lanetask AS t ON t.id = o.task_id
  JOIN queue_app_decision AS d ON d.id = t.decision_id
  JOIN auth_user AS u ON u.id = d.reviewer_id
  JOIN queue_app_queue AS q ON q.id = t.queue_id
 WHERE o.kind = 'qa' AND o.result = 'reviewed' AND o.created_at >= now() - %(window)s
   AND t.kind = 'qa' AND t.done_at >= now() - %(window)s
   AND (%(queue_id)s::bigint IS NULL OR t.queue_id = %(queue_id)s::bigint)
   AND (%(reviewer_id)s::bigint IS NULL OR t.maker_id = %(reviewer_id)s::bigint);

-- ===============================================================================================
-- outbox: The effect-job outbox the apply workers drain, and their wake-up.

-- name: WAKE_APPLY_WORKERS
-- Wake the apply workers after effect jobs were queued.
SELECT pg_notify('queue_app_effect_jobs', '');

-- name: CLAIM_DUE_EFFECT_JOBS
-- Claim due effect jobs, in decision order per item, locked until commit.
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
   FOR UPDATE OF j SKIP LOCKED;

-- name: INSERT_APPLIED_DECISION
-- Record that a decision's effect is carried out (first applier only).
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
RETURNING decision_id, status;

-- name: MARK_EFFECT_JOB_DONE
-- Close an effect job in the transaction that applied it.
UPDATE queue_app_effectjob
   SET done_at = now(), attempts = attempts + 1
 WHERE decision_id = %(decision_id)s AND done_at IS NULL;

-- name: RECORD_EFFECT_JOB_FAILURE
-- Record a failed attempt: retry later, or mark the job dead.
UPDATE queue_app_effectjob
   SET attempts = attempts + 1,
       last_error = %(error)s,
       dead = %(permanent)s OR attempts + 1 >= %(max_attempts)s,
       next_attempt_at = now() + %(delay)s
 WHERE decision_id = %(decision_id)s AND done_at IS NULL
RETURNING attempts, dead, next_attempt_at;

-- ===============================================================================================
-- chain: The tamper-evident log: verifying the chain, sealing batches, inclusion proofs.

-- name: VERIFY_CHAIN
-- The first link of the per-decision chain whose stored hash or sequence is wrong.
SELECT id, chain_seq, chain_hash, expected
  FROM (
    SELECT d.id, d.chain_seq, d.chain_hash,
           encode(sha256(convert_to(
               coalesce(lag(d.chain_hash) OVER w, '') || '|' || queue_app_decision_chain_input(d),
               'UTF8')), 'hex') AS expected,
           lag(d.chain_seq) OVER w AS previous_seq
      FROM queue_app_decision AS d
     WHERE d.chain_seq IS NOT NULL
    WINDOW w AS (ORDER BY d.chain_seq)
  ) AS links
 WHERE chain_hash <> expected OR chain_seq <> coalesce(previous_seq, 0) + 1
 ORDER BY chain_seq
 LIMIT 1;

-- name: COUNT_DECISIONS
-- How many decisions the log holds.
SELECT count(*) FROM queue_app_decision;

-- name: COUNT_OUTCOMES
-- How many second-person outcomes the log holds.
SELECT count(*) FROM queue_app_laneoutcome;

-- name: CHAIN_HEADS
-- The heads of both chains and the database clock, for a signed checkpoint.
SELECT now(), d.chain_seq, d.chain_hash, d.id, b.seq, b.batch_hash, b.size
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (
        SELECT chain_seq, chain_hash, id FROM queue_app_decision
         WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1
       ) AS d ON true
  LEFT JOIN LATERAL (
        SELECT seq, batch_hash, size FROM queue_app_chainbatch ORDER BY seq DESC LIMIT 1
       ) AS b ON true;

-- name: CHAIN_LINK_AT
-- The per-decision chain's link at one position, to compare with a checkpoint.
SELECT chain_hash, id FROM queue_app_decision WHERE chain_seq = %(seq)s;

-- name: BATCH_AT
-- The sealed batch at one position, to compare with a checkpoint.
SELECT batch_hash, size FROM queue_app_chainbatch WHERE seq = %(seq)s;

-- name: TRY_SEAL_LOCK
-- Take the sealer's lock if free: one sealer at a time, the others skip a round.
SELECT pg_try_advisory_xact_lock(%(key)s);

-- name: SEAL_LOCK
-- Wait for the sealer's lock, for what needs everything committed sealed first.
SELECT pg_advisory_xact_lock(%(key)s);

-- name: TAKE_UNSEALED
-- Take a round of unsealed decisions, outcomes and statements off the lists, with leaves.
WITH kept AS MATERIALIZED (
    SELECT count(*) AS n
      FROM (SELECT 1 FROM queue_app_unsealedlaneoutcome LIMIT %(outcome_share)s) AS waiting
), kept_statements AS MATERIALIZED (
    SELECT count(*) AS n
      FROM (SELECT 1 FROM queue_app_unsealedstatement LIMIT %(outcome_share)s) AS waiting
), decisions AS (
    DELETE FROM queue_app_unsealeddecision
     WHERE decision_id IN (SELECT decision_id FROM queue_app_unsealeddecision
                            ORDER BY decision_id
                            LIMIT %(limit)s - (SELECT n FROM kept)
                                  - (SELECT n FROM kept_statements))
 RETURNING decision_id
), outcomes AS (
    DELETE FROM queue_app_unsealedlaneoutcome
     WHERE outcome_id IN (SELECT outcome_id FROM queue_app_unsealedlaneoutcome
                           ORDER BY outcome_id
                           LIMIT %(limit)s - (SELECT count(*) FROM decisions)
                                 - (SELECT n FROM kept_statements))
 RETURNING outcome_id
), statements AS (
    DELETE FROM queue_app_unsealedstatement
     WHERE statement_id IN (SELECT statement_id FROM queue_app_unsealedstatement
                             ORDER BY statement_id
                             LIMIT %(limit)s - (SELECT count(*) FROM decisions)
                                   - (SELECT count(*) FROM outcomes))
 RETURNING statement_id
)
SELECT 0 AS part, 'decision' AS kind, decisions.decision_id AS id,
       CASE WHEN d.id IS NOT NULL THEN queue_app_decision_leaf(d) END AS leaf
  FROM decisions LEFT JOIN queue_app_decision AS d ON d.id = decisions.decision_id
UNION ALL
SELECT 1, 'outcome', outcomes.outcome_id,
       CASE WHEN o.task_id IS NOT NULL THEN queue_app_laneoutcome_leaf(o) END
  FROM outcomes LEFT JOIN queue_app_laneoutcome AS o ON o.task_id = outcomes.outcome_id
UNION ALL
SELECT 2, 'statement', statements.statement_id,
       CASE WHEN s.id IS NOT NULL THEN queue_app_statement_leaf(s) END
  FROM statements
  LEFT JOIN queue_app_statementofreasons AS s ON s.id = statements.statement_id
 ORDER BY part, id;

-- name: SEAL_PREDECESSOR
-- The batch (or old chain head) a new seal chains to.
SELECT coalesce(
         (SELECT seq FROM queue_app_chainbatch ORDER BY seq DESC LIMIT 1), 0) AS seq,
       coalesce(
         (SELECT batch_hash FROM queue_app_chainbatch ORDER BY seq DESC LIMIT 1),
         (SELECT chain_hash FROM queue_app_decision
           WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1),
         '') AS hash;

-- name: INSERT_BATCH
-- Record a sealed batch and its entries in one statement.
WITH batch AS (
    INSERT INTO queue_app_chainbatch (seq, size, merkle_root, prev_hash, batch_hash, sealed_at)
    VALUES (%(seq)s, %(size)s, %(root)s, %(prev_hash)s, %(batch_hash)s, now())
 RETURNING seq
), decisions AS (
    INSERT INTO queue_app_chainentry (decision_id, batch_id, position, leaf)
    SELECT decision_id, (SELECT seq FROM batch), position - 1, leaf
      FROM unnest(%(decision_ids)s::bigint[], %(leaves)s::text[])
           WITH ORDINALITY AS e (decision_id, leaf, position)
), outcomes AS (
    INSERT INTO queue_app_laneoutcomeentry (outcome_id, batch_id, position, leaf)
    SELECT outcome_id, (SELECT seq FROM batch),
           cardinality(%(decision_ids)s::bigint[]) + position - 1, leaf
      FROM unnest(%(outcome_ids)s::bigint[], %(outcome_leaves)s::text[])
           WITH ORDINALITY AS e (outcome_id, leaf, position)
), statements AS (
    INSERT INTO queue_app_statemententry (statement_id, batch_id, position, leaf)
    SELECT statement_id, (SELECT seq FROM batch),
           cardinality(%(decision_ids)s::bigint[]) + cardinality(%(outcome_ids)s::bigint[])
             + position - 1, leaf
      FROM unnest(%(statement_ids)s::bigint[], %(statement_leaves)s::text[])
           WITH ORDINALITY AS e (statement_id, leaf, position)
)
SELECT seq FROM batch;

-- name: SEALED_LEAVES
-- Every sealed batch with its leaves as sealed and as recomputed, for verification.
SELECT b.seq, b.size, b.merkle_root, b.prev_hash, b.batch_hash,
       e.position, e.kind, e.entry_id, e.sealed_leaf, e.leaf
  FROM queue_app_chainbatch AS b
  LEFT JOIN (
        SELECT ce.batch_id, ce.position, 'decision' AS kind, ce.decision_id AS entry_id,
               ce.leaf AS sealed_leaf, queue_app_decision_leaf(d) AS leaf
          FROM queue_app_chainentry AS ce
          LEFT JOIN queue_app_decision AS d ON d.id = ce.decision_id
        UNION ALL
        SELECT oe.batch_id, oe.position, 'outcome', oe.outcome_id,
               oe.leaf, queue_app_laneoutcome_leaf(o)
          FROM queue_app_laneoutcomeentry AS oe
          LEFT JOIN queue_app_laneoutcome AS o ON o.task_id = oe.outcome_id
        UNION ALL
        SELECT se.batch_id, se.position, 'statement', se.statement_id,
               se.leaf, queue_app_statement_leaf(s)
          FROM queue_app_statemententry AS se
          LEFT JOIN queue_app_statementofreasons AS s ON s.id = se.statement_id
       ) AS e ON e.batch_id = b.seq
 ORDER BY b.seq, e.position;

-- name: OLD_CHAIN_HEAD_HASH
-- The last link of the per-decision chain, which the first sealed batch chains to.
SELECT coalesce((SELECT chain_hash FROM queue_app_decision WHERE chain_seq IS NOT NULL
                  ORDER BY chain_seq DESC LIMIT 1), '') AS hash;

-- name: INCLUSION_PROOF
-- A sealed entry's batch and that batch's leaves, for an inclusion proof.
WITH target AS (
    SELECT batch_id, position FROM queue_app_chainentry WHERE decision_id = %(decision_id)s
    UNION ALL
    SELECT batch_id, position FROM queue_app_laneoutcomeentry WHERE outcome_id = %(outcome_id)s
    UNION ALL
    SELECT batch_id, position FROM queue_app_statemententry
     WHERE statement_id = %(statement_id)s
)
SELECT t.batch_id AS seq, t.position, b.size, b.merkle_root, b.batch_hash,
       (SELECT array_agg(all_entries.leaf ORDER BY all_entries.position)
          FROM (SELECT e2.leaf, e2.position FROM queue_app_chainentry AS e2
                 WHERE e2.batch_id = t.batch_id
                UNION ALL
                SELECT o2.leaf, o2.position FROM queue_app_laneoutcomeentry AS o2
                 WHERE o2.batch_id = t.batch_id
                UNION ALL
                SELECT s2.leaf, s2.position FROM queue_app_statemententry AS s2
                 WHERE s2.batch_id = t.batch_id) AS all_entries) AS leaves
  FROM target AS t JOIN queue_app_chainbatch AS b ON b.seq = t.batch_id;

-- name: UNACCOUNTED_DECISIONS
-- Decisions and outcomes neither sealed nor waiting, and waiting rows now gone.
SELECT
  (SELECT min(d.id) FROM queue_app_decision AS d
    WHERE d.chain_seq IS NULL
      AND NOT EXISTS (SELECT 1 FROM queue_app_chainentry AS e WHERE e.decision_id = d.id)
      AND NOT EXISTS (SELECT 1 FROM queue_app_unsealeddecision AS u WHERE u.decision_id = d.id)
  ) AS first_unaccounted,
  (SELECT min(o.task_id) FROM queue_app_laneoutcome AS o
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_laneoutcomeentry AS e WHERE e.outcome_id = o.task_id)
      AND NOT EXISTS (SELECT 1 FROM queue_app_unsealedlaneoutcome AS u
                       WHERE u.outcome_id = o.task_id)
  ) AS first_unaccounted_outcome,
  (SELECT min(s.id) FROM queue_app_statementofreasons AS s
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_statemententry AS e WHERE e.statement_id = s.id)
      AND NOT EXISTS (SELECT 1 FROM queue_app_unsealedstatement AS u
                       WHERE u.statement_id = s.id)
  ) AS first_unaccounted_statement,
  (SELECT min(u.decision_id) FROM queue_app_unsealeddecision AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_decision AS d WHERE d.id = u.decision_id)
  ) AS first_vanished,
  (SELECT min(u.outcome_id) FROM queue_app_unsealedlaneoutcome AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_laneoutcome AS o WHERE o.task_id = u.outcome_id)
  ) AS first_vanished_outcome,
  (SELECT min(u.statement_id) FROM queue_app_unsealedstatement AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_statementofreasons AS s
                       WHERE s.id = u.statement_id)
  ) AS first_vanished_statement,
  (SELECT count(*) FROM queue_app_unsealeddecision) AS waiting,
  (SELECT min(d.created_at) FROM queue_app_unsealeddecision AS u
     JOIN queue_app_decision AS d ON d.id = u.decision_id) AS oldest_waiting;

-- ===============================================================================================
-- ops: The aggregate statements behind /ops/, /metrics and doctor, named and commented.

-- name: OPEN_WORK
-- Open work per queue: counts, oldest pending item and lease-count histogram.
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
 GROUP BY queue_id, bucket;

-- name: DECISIONS_PER_HOUR
-- Decisions per queue and hour over the window, zeros included.
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
 ORDER BY q.id, h.hour;

-- name: TIME_TO_DECISION
-- Handling time of reviewer verdicts in the window, per queue.
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
 GROUP BY d.queue_id;

-- name: REASON_SHARES
-- Which reasons dominate each verdict, per queue, over the window.
SELECT d.queue_id, d.verdict, r.code, r.label, count(*) AS decisions,
       count(*)::float8 / sum(count(*)) OVER (PARTITION BY d.queue_id, d.verdict) AS share
  FROM queue_app_decision AS d
  JOIN queue_app_reasoncode AS r ON r.id = d.reason_code_id
 WHERE d.created_at >= date_trunc('hour', now()) - make_interval(hours => %(hours)s - 1)
   AND d.verdict <> 'overturn'
 GROUP BY d.queue_id, d.verdict, r.code, r.label
 ORDER BY d.queue_id, d.verdict, decisions DESC, r.code;

-- name: APPLY_STATE
-- Decisions not carried out yet, per queue, and how late the oldest is.
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
 GROUP BY j.queue_id;

-- name: DEAD_JOBS
-- The dead effect jobs an operator should look at, newest failure first.
SELECT j.decision_id, j.queue_id, q.slug AS queue, d.item_id, d.verdict, j.attempts,
       j.last_error, d.created_at AS decided_at
  FROM queue_app_effectjob AS j
  JOIN queue_app_decision AS d ON d.id = j.decision_id
  JOIN queue_app_queue AS q ON q.id = j.queue_id
 WHERE j.dead = true AND j.done_at IS NULL
 ORDER BY j.decision_id DESC
 LIMIT %(limit)s;

-- name: BLOCKED_EFFECTS
-- Items whose later effects a dead job holds back.
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
 LIMIT %(limit)s;

-- name: DOUBLE_LEASES
-- People holding more than one live lease in one queue.
SELECT i.queue_id, q.slug AS queue, i.lease_owner_id AS reviewer_id, u.username,
       count(*) AS live_leases, array_agg(i.id ORDER BY i.id) AS item_ids
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
  JOIN auth_user AS u ON u.id = i.lease_owner_id
 WHERE i.state = 'leased' AND i.lease_expires > now()
   AND NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = i.lease_owner_id)
 GROUP BY i.queue_id, q.slug, i.lease_owner_id, u.username
HAVING count(*) > 1;

-- name: REVIEWERS_ACTIVE
-- Whether anyone is working: a live lease, or a recent decision.
SELECT EXISTS (SELECT 1 FROM queue_app_reviewitem WHERE state = 'leased' AND lease_expires > now())
    OR coalesce((SELECT created_at FROM queue_app_decision ORDER BY id DESC LIMIT 1)
                > now() - %(active_within)s, false) AS active;

-- name: QUEUE_TABLE_LOCKS
-- Backends holding or waiting for locks on the queue tables.
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
   AND c.relname LIKE 'queue\_app\_%%'
   AND a.pid <> pg_backend_pid()
   AND a.backend_type = 'client backend'
 GROUP BY a.pid, a.usename, a.application_name, a.state, a.xact_start, a.state_change, a.query;

-- name: TABLE_BLOAT
-- Dead tuples on the queue tables.
SELECT relname::text AS table_name, n_live_tup, n_dead_tup, last_autovacuum, last_vacuum
  FROM pg_stat_user_tables
 WHERE relname LIKE 'queue\_app\_%%'
 ORDER BY n_dead_tup DESC;

-- name: SLA_OPEN
-- Open work against its deadline, and holds, per queue.
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
  FROM deadlines AS d FULL JOIN holds AS h ON h.queue_id = d.queue_id;

-- name: SLA_DECISIONS
-- Outcomes made final in the window: how many late, time left at p50 and p90.
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
 GROUP BY f.queue_id;

-- name: SEALING_BACKLOG
-- What waits for the sealer, and the oldest of each kind.
SELECT (SELECT count(*) FROM queue_app_unsealeddecision) AS decisions,
       (SELECT min(d.created_at) FROM queue_app_unsealeddecision AS u
          JOIN queue_app_decision AS d ON d.id = u.decision_id) AS oldest_decision,
       (SELECT count(*) FROM queue_app_unsealedlaneoutcome) AS outcomes,
       (SELECT min(o.created_at) FROM queue_app_unsealedlaneoutcome AS u
          JOIN queue_app_laneoutcome AS o ON o.task_id = u.outcome_id) AS oldest_outcome,
       now() AS now;

-- ===============================================================================================
-- oversight: The statements behind the oversight figures of machine suggestions (/ops/, /metrics, export).

-- name: SUGGESTION_FOLLOWING
-- Decisions on suggested items by queue, reviewer, band, view; how many followed.
SELECT d.queue_id, q.slug, q.name AS queue_name, d.reviewer_id,
       coalesce(d.reviewer_username, u.username) AS reviewer_username,
       width_bucket((i.suggestion ->> 'confidence')::numeric, %(band_floors)s::numeric[])
           AS band,
       d.suggestion_view,
       count(*) AS decisions,
       count(*) FILTER (WHERE d.suggestion_followed) AS followed
  FROM queue_app_decision AS d
  JOIN queue_app_reviewitem AS i ON i.id = d.item_id
  JOIN queue_app_queue AS q ON q.id = d.queue_id
  JOIN auth_user AS u ON u.id = d.reviewer_id
 WHERE d.created_at >= now() - %(window)s
   AND d.verdict <> 'overturn'
   AND d.suggestion_view IS NOT NULL
 GROUP BY d.queue_id, q.slug, q.name, d.reviewer_id, coalesce(d.reviewer_username, u.username),
          band, d.suggestion_view
 ORDER BY q.name, d.queue_id;

-- name: AUTOMATIC_DECISIONS_QA
-- Automatic decisions per queue, and how many blind QA agreed with.
SELECT d.queue_id, q.slug, q.name AS queue_name,
       count(*) AS automatic,
       count(qa.agrees_verdict) AS qa_reviewed,
       count(*) FILTER (WHERE qa.agrees_verdict) AS qa_agreed
  FROM queue_app_decision AS d
  JOIN queue_app_queue AS q ON q.id = d.queue_id
  LEFT JOIN LATERAL (
        SELECT o.agrees_verdict
          FROM queue_app_lanetask AS t
          JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
         WHERE t.item_id = d.item_id AND t.decision_id = d.id AND t.kind = 'qa'
           AND o.kind = 'qa' AND o.result = 'reviewed'
         ORDER BY o.created_at DESC
         LIMIT 1
       ) AS qa ON true
 WHERE d.created_at >= now() - %(window)s
   AND d.verdict <> 'overturn'
   AND d.suggestion_view = 'automatic'
 GROUP BY d.queue_id, q.slug, q.name
 ORDER BY q.name, d.queue_id;

-- ===============================================================================================
-- mywork: The statements behind My work.

-- name: MY_DECISION_COUNTS
-- One reviewer's verdicts per queue over 30 days, with today's and the week's.
WITH totals AS (
    SELECT queue_id, verdict,
           coalesce(sum(decisions) FILTER (WHERE day >= %(today_day)s), 0) AS today,
           coalesce(sum(decisions) FILTER (WHERE day >= %(week_day)s), 0) AS week,
           sum(decisions) AS month
      FROM queue_app_decisiontally
     WHERE reviewer_id = %(reviewer)s AND day >= %(month_day)s AND verdict <> 'overturn'
     GROUP BY queue_id, verdict
    UNION ALL
    SELECT queue_id, verdict,
           count(*) FILTER (WHERE created_at >= %(today)s AND created_at < %(today_day)s),
           count(*) FILTER (WHERE created_at >= %(week)s AND created_at < %(week_day)s),
           count(*) FILTER (WHERE created_at >= %(month)s AND created_at < %(month_day)s)
      FROM queue_app_decision
     WHERE reviewer_id = %(reviewer)s AND verdict <> 'overturn'
       AND created_at >= %(month)s AND created_at < %(month_day)s
        OR reviewer_id = %(reviewer)s AND verdict <> 'overturn'
       AND created_at >= %(week)s AND created_at < %(week_day)s
        OR reviewer_id = %(reviewer)s AND verdict <> 'overturn'
       AND created_at >= %(today)s AND created_at < %(today_day)s
     GROUP BY queue_id, verdict
), touched AS (
    SELECT t.decision_id AS id
      FROM queue_app_lanetask AS t
     WHERE t.maker_id = %(reviewer)s AND t.kind = 'check'
       AND t.created_at >= %(month)s - interval '1 day'  -- a check follows its decision
    UNION
    SELECT o.supersedes_id
      FROM queue_app_decision AS o
     WHERE o.verdict = 'overturn' AND o.created_at >= %(month)s
), exceptions AS (
    SELECT d.queue_id, d.verdict,
           CASE WHEN s.status IN ('awaiting_check', 'returned') THEN s.status END AS held,
           d.created_at >= %(today)s AS in_today, d.created_at >= %(week)s AS in_week,
           s.status = 'overturned' AS overturned
      FROM touched
      JOIN queue_app_decision AS d ON d.id = touched.id
      JOIN queue_app_decisionstatus AS s ON s.decision_id = d.id
     WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(month)s
       AND d.verdict <> 'overturn'
       AND (s.status IN ('awaiting_check', 'returned', 'overturned'))
), parts AS (
    SELECT queue_id, verdict, NULL::text AS held, today, week, month, 0 AS overturned
      FROM totals
    UNION ALL
    SELECT queue_id, verdict, NULL, -count(*) FILTER (WHERE in_today),
           -count(*) FILTER (WHERE in_week), -count(*), 0
      FROM exceptions WHERE held IS NOT NULL GROUP BY queue_id, verdict
    UNION ALL
    SELECT queue_id, verdict, held, count(*) FILTER (WHERE in_today),
           count(*) FILTER (WHERE in_week), count(*), 0
      FROM exceptions WHERE held IS NOT NULL GROUP BY queue_id, verdict, held
    UNION ALL
    SELECT queue_id, verdict, NULL, 0, 0, 0, count(*)
      FROM exceptions WHERE overturned GROUP BY queue_id, verdict
)
SELECT p.queue_id, q.name AS queue_name, p.verdict, p.held,
       sum(p.today)::bigint AS today, sum(p.week)::bigint AS week,
       sum(p.month)::bigint AS month, sum(p.overturned)::bigint AS overturned
  FROM parts AS p
  JOIN queue_app_queue AS q ON q.id = p.queue_id
 GROUP BY p.queue_id, q.name, p.verdict, p.held
HAVING sum(p.month) > 0
 ORDER BY q.name, p.verdict, p.held NULLS FIRST;

-- name: MY_HANDLING_TIME
-- One reviewer's handling time per queue over 7 and 30 days.
WITH sample AS (
    SELECT d.queue_id, d.item_id, d.created_at
      FROM queue_app_decision AS d
     WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(month)s
       AND d.verdict <> 'overturn'
     ORDER BY d.created_at DESC
     LIMIT %(sample)s
)
SELECT d.queue_id,
       count(*) FILTER (WHERE d.created_at >= %(week)s) AS week_samples,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - c.at))
           FILTER (WHERE d.created_at >= %(week)s) AS week_p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - c.at))
           FILTER (WHERE d.created_at >= %(week)s) AS week_p90,
       count(*) AS month_samples,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - c.at))
           AS month_p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - c.at))
           AS month_p90
  FROM sample AS d
 CROSS JOIN LATERAL (
        SELECT e.at
          FROM queue_app_itemevent AS e
         WHERE e.item_id = d.item_id AND e.kind IN ('claimed', 'reclaimed')
           AND e.at <= d.created_at
         ORDER BY e.at DESC
         LIMIT 1
       ) AS c
 GROUP BY ROLLUP (d.queue_id);

-- name: MY_HOLDS
-- The items a reviewer put on hold that are still held, soonest back first.
SELECT i.id, i.subject, i.hold_until, i.held_at, i.due_at,
       q.name AS queue_name, r.code AS reason_code, r.label AS reason_label
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
  JOIN queue_app_holdreason AS r ON r.id = i.hold_reason_id
 WHERE i.state = 'held'
   AND (SELECT e.actor_id FROM queue_app_itemevent AS e
         WHERE e.item_id = i.id AND e.kind = 'held'
         ORDER BY e.at DESC, e.id DESC
         LIMIT 1) = %(reviewer)s
 ORDER BY i.hold_until, i.id
 LIMIT %(limit)s;

-- name: MY_SUBJECT_SEARCH
-- A reviewer's newest decisions whose subject has the words typed.
SELECT s.id
  FROM (SELECT d.id, d.created_at, i.subject
          FROM queue_app_decision AS d
          JOIN queue_app_reviewitem AS i ON i.id = d.item_id
         WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(since)s
         ORDER BY d.created_at DESC, d.id DESC
         LIMIT %(scope)s) AS s
 WHERE to_tsvector('simple'::regconfig, s.subject) @@ to_tsquery('simple'::regconfig, %(words)s)
 ORDER BY s.created_at DESC, s.id DESC
 LIMIT %(limit)s;

-- name: MY_SEARCH_REACH
-- How far back a reviewer's newest decisions a subject search reads go.
SELECT d.created_at
  FROM queue_app_decision AS d
 WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(since)s
 ORDER BY d.created_at DESC, d.id DESC
OFFSET %(scope)s - 1
 LIMIT 2;

-- ===============================================================================================
-- evidence: Backfilling stored evidence hashes for open items (manage.py backfill_evidence_hashes).

-- name: UNHASHED_OPEN_ITEMS
-- A batch of open items without a stored evidence hash, in id order.
SELECT id, subject, payload::text AS payload, attachments::text AS attachments,
       suggestion::text AS suggestion
  FROM queue_app_reviewitem
 WHERE id > %(after)s AND evidence_hash IS NULL AND state IN ('pending', 'leased', 'held')
 ORDER BY id
 LIMIT %(batch)s;

-- name: STORE_EVIDENCE_HASHES
-- Store evidence hashes where each row still holds exactly what was hashed.
UPDATE queue_app_reviewitem AS i
   SET evidence_hash = u.hash
  FROM unnest(%(ids)s::bigint[], %(hashes)s::text[], %(subjects)s::text[],
              %(payloads)s::text[], %(attachments)s::text[])
       AS u(id, hash, subject, payload, attachments)
 WHERE i.id = u.id
   AND i.evidence_hash IS NULL
   AND i.state IN ('pending', 'leased', 'held')
   AND i.subject = u.subject
   AND i.payload::text = u.payload
   AND i.attachments::text = u.attachments;

-- ===============================================================================================
-- automation: Automatic decisions: the machine's suggestion taken as the decision at intake.

-- name: AUTO_DECIDE
-- Take a new item's suggestion as its queue's automatic decision, at intake.
WITH src AS (
    UPDATE queue_app_reviewitem AS i
       SET state = CASE WHEN queue_app_check_needed(q.id, i.suggestion ->> 'verdict', i.payload,
                                                    true)
                        THEN 'awaiting_check' ELSE 'decided' END,
           decided_at = now()
      FROM queue_app_queue AS q
     WHERE i.id = %(item_id)s AND i.queue_id = %(queue_id)s AND i.state = 'pending'
       AND q.id = i.queue_id AND q.automation_stopped_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM queue_app_automationswitch AS s
                        WHERE s.id = 1 AND s.stopped_at IS NOT NULL)
       AND q.auto_decide_above IS NOT NULL
       AND EXISTS (SELECT 1 FROM auth_user AS u
                    WHERE u.id = q.auto_decide_user_id AND u.is_active)
       AND i.suggestion ->> 'verdict' IN ('approve', 'reject')
       AND CASE WHEN i.suggestion ->> 'confidence' ~ '^[0-9]+(\.[0-9]+)?$'
                THEN (i.suggestion ->> 'confidence')::numeric >= q.auto_decide_above
                ELSE false END
 RETURNING i.id AS item_id, i.queue_id, i.evidence_hash, i.state = 'awaiting_check' AS needs_check,
           (i.state = 'decided'
            AND %(qa_draw)s::numeric * 10000
                < q.auto_decide_qa_rate * 100 * 18446744073709551616)
           IS TRUE AS qa_sampled,
           CASE WHEN i.state = 'awaiting_check' THEN i.due_at END AS due_at,
           q.auto_decide_user_id AS reviewer_id, q.auto_decide_above AS threshold,
           i.suggestion
), decision AS (
    INSERT INTO queue_app_decision
           (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
            supersedes_id, corrected_verdict, lease_token, created_at, chain_hash,
            suggestion_view)
    SELECT src.item_id, src.queue_id, src.reviewer_id, src.suggestion ->> 'verdict',
           (SELECT r.id FROM queue_app_reasoncode AS r
             WHERE r.queue_id = src.queue_id AND r.verdict = src.suggestion ->> 'verdict'
               AND r.code = src.suggestion ->> 'reason_code' AND r.retired_at IS NULL),
           src.evidence_hash, '', NULL, NULL, NULL, now(), '', 'automatic'
      FROM src
 RETURNING *
), job AS (
    -- A decision that needs a check gets its effect job only when a checker confirms it
    -- (lanes_sql.CONFIRM_CHECK).
    INSERT INTO queue_app_effectjob
           (decision_id, queue_id, created_at, attempts, next_attempt_at, last_error, dead)
    SELECT decision.id, decision.queue_id, now(), 0, now(), '', false
      FROM decision, src WHERE NOT src.needs_check
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT decision.item_id, 'auto_decided', decision.reviewer_id, now(),
           jsonb_build_object('decision_id', decision.id, 'verdict', decision.verdict,
                              'confidence', src.suggestion -> 'confidence',
                              'threshold', src.threshold::text,
                              'model', src.suggestion -> 'model',
                              'awaiting_check', src.needs_check,
                              'qa_sampled', src.qa_sampled)
      FROM decision, src
), lane AS (
    INSERT INTO queue_app_lanetask
           (kind, queue_id, item_id, decision_id, maker_id, state, lease_count, due_at,
            created_at)
    SELECT CASE WHEN src.needs_check THEN 'check' ELSE 'qa' END,
           decision.queue_id, decision.item_id, decision.id, decision.reviewer_id, 'open', 0,
           src.due_at, now()
      FROM decision, src WHERE src.needs_check OR src.qa_sampled
)
SELECT decision.*, src.needs_check AS awaiting_check, src.qa_sampled
  FROM decision, src;

-- ===============================================================================================
-- replication: The state of streaming replication, read where it is known: on the replica, or the primary.

-- name: REPLICA_LAG
-- How far the replica's replay is behind what it received, in seconds.
SELECT pg_is_in_recovery() AS in_recovery,
       CASE WHEN NOT pg_is_in_recovery() THEN 0.0
            WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0.0
            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0.0)
       END::float8 AS lag_seconds;

-- name: STANDBYS
-- The primary's standbys and how far each is behind, in seconds and bytes.
SELECT application_name, client_addr::text AS client_addr, state,
       coalesce(extract(epoch FROM replay_lag), 0.0)::float8 AS replay_lag_seconds,
       pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint AS replay_behind_bytes
  FROM pg_stat_replication
 ORDER BY application_name;

-- ===============================================================================================
-- appeals: The statements behind the appeal figures (/ops/, /metrics).

-- name: APPEAL_FIGURES
-- Appeals per queue: received, pending, late, decided, reversed, median time, returned.
SELECT q.slug,
       count(*) AS received,
       count(*) FILTER (WHERE t.state = 'open') AS pending,
       count(*) FILTER (WHERE t.state = 'open' AND a.due_at < now()) AS past_deadline,
       count(*) FILTER (WHERE o.result IN ('upheld', 'overturned')) AS decided,
       count(*) FILTER (WHERE o.result = 'overturned') AS reversed,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM o.created_at - a.received_at))
           FILTER (WHERE o.result IN ('upheld', 'overturned')) AS median_seconds,
       count(*) FILTER (WHERE n.dead) AS notices_dead,
       count(*) FILTER (WHERE s.status = 'returned') AS reversals_returned
  FROM queue_app_appeal AS a
  JOIN queue_app_queue AS q ON q.id = a.queue_id
  JOIN queue_app_lanetask AS t ON t.id = a.task_id
  LEFT JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
  LEFT JOIN queue_app_decisionstatus AS s ON s.decision_id = o.overturn_id
  LEFT JOIN queue_app_appealnotice AS n ON n.appeal_id = a.id
 GROUP BY q.slug
 ORDER BY q.slug;

-- ===============================================================================================
-- transparency: The statements behind the transparency report (/ops/transparency.csv|json, export_transparency).

-- name: TRANSPARENCY_STATEMENTS
-- Statements of reasons of a period per queue and in all: kinds, grounds, automation, delivery.
WITH period AS (
    SELECT s.kind, s.errors = '{}'::jsonb AS valid, s.body::jsonb AS body, d.queue_id,
           EXISTS (SELECT 1 FROM queue_app_statementdelivery AS j
                    WHERE j.statement_id = s.id AND j.done_at IS NULL AND j.dead) AS has_dead,
           EXISTS (SELECT 1 FROM queue_app_statementdelivery AS j
                    WHERE j.statement_id = s.id AND j.done_at IS NULL) AS has_open,
           EXISTS (SELECT 1 FROM queue_app_statementdelivery AS j
                    WHERE j.statement_id = s.id AND j.channel = 'tdb'
                      AND j.done_at IS NOT NULL) AS in_database
      FROM queue_app_statementofreasons AS s
      JOIN queue_app_decision AS d ON d.id = s.decision_id
     WHERE s.created_at >= %(start)s AND s.created_at < %(end)s
)
SELECT q.slug, q.name AS queue_name,
       count(*) AS built,
       count(*) FILTER (WHERE p.kind = 'restriction') AS restrictions,
       count(*) FILTER (WHERE p.kind = 'lifted') AS lifted,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND p.body ->> 'decision_ground' = 'DECISION_GROUND_ILLEGAL_CONTENT')
           AS ground_illegal,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND p.body ->> 'decision_ground'
                              = 'DECISION_GROUND_INCOMPATIBLE_CONTENT')
           AS ground_incompatible,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND (p.body -> 'decision_visibility') IS NOT NULL) AS kind_visibility,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND (p.body -> 'decision_monetary') IS NOT NULL) AS kind_monetary,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND (p.body -> 'decision_provision') IS NOT NULL) AS kind_provision,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND (p.body -> 'decision_account') IS NOT NULL) AS kind_account,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND p.body ->> 'automated_detection' = 'Yes') AS detection_automated,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND p.body ->> 'automated_decision' = 'AUTOMATED_DECISION_FULLY')
           AS decision_fully,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND p.body ->> 'automated_decision' = 'AUTOMATED_DECISION_PARTIALLY')
           AS decision_partially,
       count(*) FILTER (WHERE p.kind = 'restriction'
                          AND p.body ->> 'automated_decision'
                              = 'AUTOMATED_DECISION_NOT_AUTOMATED')
           AS decision_not_automated,
       count(*) FILTER (WHERE p.valid AND NOT p.has_open) AS sent,
       count(*) FILTER (WHERE p.in_database) AS in_database,
       count(*) FILTER (WHERE NOT p.valid) AS refused,
       count(*) FILTER (WHERE p.valid AND p.has_dead) AS dead,
       count(*) FILTER (WHERE p.valid AND NOT p.has_dead AND p.has_open) AS waiting
  FROM period AS p
  JOIN queue_app_queue AS q ON q.id = p.queue_id
 GROUP BY GROUPING SETS ((q.slug, q.name), ())
 ORDER BY q.slug NULLS LAST;

-- name: TRANSPARENCY_CATEGORIES
-- Restrictions of a period per queue and in all, by the statement's category and ground.
SELECT r.slug, r.category, r.ground, count(*) AS restrictions
  FROM (SELECT q.slug,
               coalesce(s.body::jsonb ->> 'category', '') AS category,
               coalesce(s.body::jsonb ->> 'decision_ground', '') AS ground
          FROM queue_app_statementofreasons AS s
          JOIN queue_app_decision AS d ON d.id = s.decision_id
          JOIN queue_app_queue AS q ON q.id = d.queue_id
         WHERE s.created_at >= %(start)s AND s.created_at < %(end)s
           AND s.kind = 'restriction') AS r
 GROUP BY GROUPING SETS ((r.slug, r.category, r.ground), (r.category, r.ground))
 ORDER BY r.slug NULLS LAST, r.category, r.ground;

-- name: TRANSPARENCY_HANDLING
-- Decisions of a period in queues with a statement policy: counts and median intake to decision.
SELECT q.slug, q.name AS queue_name,
       count(*) FILTER (WHERE d.verdict <> 'overturn') AS decisions,
       count(*) FILTER (WHERE d.verdict <> 'overturn' AND st.id IS NOT NULL) AS restricting,
       count(*) FILTER (WHERE d.verdict = 'overturn') AS overturns,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - i.created_at))
           FILTER (WHERE d.verdict <> 'overturn') AS median_decision_seconds,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.created_at - i.created_at))
           FILTER (WHERE d.verdict <> 'overturn' AND st.id IS NOT NULL)
           AS median_restriction_seconds
  FROM queue_app_decision AS d
  JOIN queue_app_statementpolicy AS pol ON pol.queue_id = d.queue_id AND pol.restricts
  JOIN queue_app_reviewitem AS i ON i.id = d.item_id
  JOIN queue_app_queue AS q ON q.id = d.queue_id
  LEFT JOIN queue_app_statementofreasons AS st ON st.decision_id = d.id AND st.kind = 'restriction'
 WHERE d.created_at >= %(start)s AND d.created_at < %(end)s
 GROUP BY GROUPING SETS ((q.slug, q.name), ())
 ORDER BY q.slug NULLS LAST;

-- name: TRANSPARENCY_APPEALS
-- Appeals of a period per queue and in all: received, decided, reversed, pending, median time.
SELECT q.slug, q.name AS queue_name,
       count(*) FILTER (WHERE a.received_at >= %(start)s) AS received,
       count(*) FILTER (WHERE o.created_at < %(end)s AND o.result IN ('upheld', 'overturned'))
           AS decided,
       count(*) FILTER (WHERE o.created_at < %(end)s AND o.result = 'upheld') AS upheld,
       count(*) FILTER (WHERE o.created_at < %(end)s AND o.result = 'overturned') AS reversed,
       count(*) FILTER (WHERE o.created_at < %(end)s AND o.result = 'closed') AS closed,
       count(*) FILTER (WHERE o.created_at IS NULL OR o.created_at >= %(end)s) AS pending,
       count(*) FILTER (WHERE (o.created_at IS NULL OR o.created_at >= %(end)s)
                          AND a.due_at < least(%(end)s, now())) AS pending_past_deadline,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM o.created_at - a.received_at))
           FILTER (WHERE o.created_at < %(end)s AND o.result IN ('upheld', 'overturned'))
           AS median_decide_seconds
  FROM queue_app_appeal AS a
  JOIN queue_app_queue AS q ON q.id = a.queue_id
  LEFT JOIN queue_app_laneoutcome AS o ON o.task_id = a.task_id
 WHERE a.received_at < %(end)s
   AND (o.created_at IS NULL OR o.created_at >= %(start)s)
 GROUP BY GROUPING SETS ((q.slug, q.name), ())
 ORDER BY q.slug NULLS LAST;

-- ===============================================================================================
-- timeline: One item's timeline: everything that happened to it, from every table that records it.

-- name: ITEM_TIMELINE
-- One page of an item's events, decisions and lane tasks, newest first, blind-aware.
WITH viewer AS (
    SELECT EXISTS (SELECT 1 FROM queue_app_lanetask AS qa
                    WHERE qa.item_id = %(item_id)s AND qa.kind = 'qa' AND qa.state = 'open'
                      AND qa.lease_owner_id = %(viewer_id)s) AS blind
)
SELECT * FROM (
  (SELECT e.at, 'event' AS source, 0 AS rank, e.id AS ref_id, e.kind,
          CASE WHEN viewer.blind THEN NULL ELSE u.username END AS actor,
          NULL::text AS verdict, NULL::text AS corrected_verdict, NULL::text AS reason_label,
          ''::text AS note, NULL::text AS suggestion_view, NULL::boolean AS suggestion_followed,
          NULL::text AS status, e.detail
     FROM viewer, queue_app_itemevent AS e
     LEFT JOIN auth_user AS u ON u.id = e.actor_id
    WHERE e.item_id = %(item_id)s
      AND e.kind NOT IN ('renewed', 'decided', 'auto_decided', 'check_confirmed',
                         'check_returned', 'qa_reviewed', 'adjudicated')
      AND NOT (viewer.blind AND e.kind = 'suggestion_revealed')
    ORDER BY e.at DESC, e.id DESC
    LIMIT %(reach)s)
  UNION ALL
  (SELECT d.created_at, 'decision', 1, d.id, d.verdict,
          coalesce(d.reviewer_username, u.username),
          d.verdict, d.corrected_verdict, r.label, d.note, d.suggestion_view,
          d.suggestion_followed, s.status, jsonb_build_object('supersedes', d.supersedes_id)
     FROM viewer, queue_app_decision AS d
     JOIN queue_app_decisionstatus AS s ON s.decision_id = d.id
     LEFT JOIN queue_app_reasoncode AS r ON r.id = d.reason_code_id
     LEFT JOIN auth_user AS u ON u.id = d.reviewer_id AND d.reviewer_username IS NULL
    WHERE d.item_id = %(item_id)s AND NOT viewer.blind
    ORDER BY d.created_at DESC, d.id DESC
    LIMIT %(reach)s)
  UNION ALL
  (SELECT t.created_at, 'lane_task', 2, t.id, t.kind, NULL, NULL, NULL, NULL, '', NULL, NULL,
          NULL, jsonb_build_object('decision_id', t.decision_id)
     FROM queue_app_lanetask AS t
    WHERE t.item_id = %(item_id)s
    ORDER BY t.created_at DESC, t.id DESC
    LIMIT %(reach)s)
  UNION ALL
  (SELECT o.created_at, 'lane_outcome', 3, t.id, o.kind, o.actor_username,
          nullif(o.verdict, ''), NULL, r.label, o.note, NULL, NULL, o.result,
          jsonb_build_object('decision_id', t.decision_id, 'agrees_verdict', o.agrees_verdict)
     FROM viewer, queue_app_lanetask AS t
     JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
     LEFT JOIN queue_app_reasoncode AS r ON r.id = o.reason_code_id
    WHERE t.item_id = %(item_id)s AND NOT viewer.blind
    ORDER BY o.created_at DESC, t.id DESC
    LIMIT %(reach)s)
) AS timeline
ORDER BY at DESC, rank DESC, ref_id DESC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: ITEM_TOUCHED_BY
-- The other people an item's events name, for its case header.
WITH viewer AS (
    SELECT EXISTS (SELECT 1 FROM queue_app_lanetask AS qa
                    WHERE qa.item_id = %(item_id)s AND qa.kind = 'qa' AND qa.state = 'open'
                      AND qa.lease_owner_id = %(viewer_id)s) AS blind
)
SELECT u.username, max(e.at) AS last_at
  FROM viewer, queue_app_itemevent AS e
  JOIN auth_user AS u ON u.id = e.actor_id
 WHERE e.item_id = %(item_id)s AND e.actor_id <> %(viewer_id)s AND NOT viewer.blind
 GROUP BY u.username
 ORDER BY last_at DESC
 LIMIT %(limit)s;
