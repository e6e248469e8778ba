"""Every raw statement Review Console runs, named, each with what it does and why it is safe.

Managers run these; services decide when. Keeping them here (rather than inline) means the
benchmarks can replay exactly the statements the application runs (bench/ reads this module),
and a reviewer of a race condition has one file to read.

Parameters are psycopg named placeholders. Table names are Django's defaults for queue_app.
"""

from __future__ import annotations

# Session guards for a claim or fenced write: a lock held elsewhere on the table (a migration,
# a stuck transaction) becomes a quick, clean error rather than a hung reviewer request.
SET_LOCAL_TIMEOUTS = """
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true)
"""

# Wake the apply workers (they LISTEN on this channel) after effect jobs were queued. Sent in a
# transaction of its own once the one that queued the jobs has committed
# (managers.wake_apply_workers_after_commit), never inside it: PostgreSQL holds one
# cluster-wide lock from a notifying transaction's commit until its commit record is flushed,
# which would make every decision in every queue commit one at a time (migration 0019). A
# transaction that only notifies writes no WAL of its own, so it commits without a flush.
WAKE_APPLY_WORKERS = "SELECT pg_notify('queue_app_effect_jobs', '')"

# Whether a user may review a queue: an active user who is a superuser, or reviews it through a
# group the queue names, or is the service user of an unrevoked API client granted the queue
# with the scope the work needs.
# Whether the user is active and a superuser is read from auth_user here, not passed in: the
# user object a request holds says what was true when the request began, and deactivating
# someone (offboarding) must stop their next write. The same goes for an API client's scope
# and revocation, which the API checked against the client it loaded at the request's start.
# The auth_user probes are uncorrelated (run once per statement, even where the fragment is a
# column of many rows), the rest two index lookups (the unique (user, group) and (queue,
# group) keys, and the client grant); a fragment, so the hot paths below carry it in a
# statement they run anyway instead of paying a round trip for it.
_IS_ACTIVE = "EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)"


def _client_grant(scope: str) -> str:
    """An unrevoked API client whose service user is %(owner_id)s, granted {queue}, with scope."""
    return (
        "EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq\n"
        "                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id\n"
        "                WHERE cq.queue_id = {queue} AND c.user_id = %(owner_id)s\n"
        f"                  AND c.revoked_at IS NULL AND {scope})"
    )


def _queue_access(client_scope: str) -> str:
    return f"""(
    {_IS_ACTIVE}
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = {{queue}} AND ug.user_id = %(owner_id)s)
    OR {_client_grant(client_scope)}
  )
)"""


# May claim, renew, hold and decide items of {queue}: a client needs the adjudicate scope.
_MAY_REVIEW = _queue_access("c.can_adjudicate")
# May read items of {queue} (a subject's history): any unrevoked client granted the queue,
# whichever scope it holds (the API lets intake clients read what they sent).
_MAY_READ = _queue_access("true")

MAY_REVIEW_QUEUE = "SELECT " + _MAY_REVIEW.format(queue="%(queue_id)s") + " AS allowed"

# Whether a user may send evidence (create an item, replace its payload, attach a file) to a
# queue: anyone who is not an API client's service user (the console and commands check their
# own rules), or the active service user of an unrevoked client with the intake scope granted
# the queue. The API checked the same against the client it loaded when the request began;
# the intake services ask again inside the transaction that writes, after the item's row lock
# (so in the queue the item is in now), so a client revoked or stripped of intake since then
# writes nothing.
MAY_SEND_EVIDENCE = (
    "SELECT NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = %(owner_id)s)\n"
    f"    OR ({_IS_ACTIVE}\n"
    "        AND " + _client_grant("c.can_intake").format(queue="%(queue_id)s") + ") AS allowed"
)

# Whether %(user_id)s holds the permission %(app_label)s.%(codename)s, decided as Django's
# ModelBackend decides it (an active user who is a superuser or holds it directly or through a
# group), and held: the rows that grant it are locked FOR SHARE until the transaction ends.
# For the rare writes of administrators (an admin save, a second-factor reset, a dead job's
# retry), whose has_perm answers are cached for the whole request. Read here, a revocation
# committed since the request began is seen; locked here, one committed later waits for this
# write to commit, so no revocation lands between the check and the write. Django's own
# revoking writes (the user form's save, user_permissions.remove, a group's deletion) update
# or delete exactly these rows: the user's row (is_active, is_superuser), the direct grant,
# and the membership and group grant. Only one granting path is locked (LIMIT 1): while it
# stands the permission is held, whatever happens to the others.
# Each CTE is MATERIALIZED so that its locking clause applies to its own rows, read once.
HOLD_PERMISSION = """
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
    OR EXISTS (SELECT 1 FROM via_group) AS held
"""

# The timeouts above, plus: serialise one reviewer's claims in one queue (two tabs pressing
# Next at once) so that they hold at most one live lease there, and report whether they may
# claim in it at all. The lock is transaction-scoped (released at commit) and keyed by
# (queue, reviewer), so other reviewers are not affected. One round trip.
SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE = (
    """
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true),
       pg_advisory_xact_lock(%(queue_id)s::int, %(owner_id)s::int),
       """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """ AS allowed
"""
)

# The timeouts above for a fenced write on one item, plus whether the user may still review
# the item's queue (access can be revoked while a lease is open). One round trip. The queue is
# the caller's (CLOSE_ITEM then closes the item only in that queue): no read of the item here,
# so on a distributed schema this touches reference tables only (docs/scaling.md).
SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS = (
    """
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true),
       """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """ AS allowed
"""
)

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
# Holds (issue 15): a held row is in no index but item_held_until, so no claim can take it
# before hold_until; the first claim after it takes it, with no sweeper, exactly as an expired
# lease is found. Its deadline was already pushed back by the whole hold when it was put on
# hold (HOLD_ITEM), so nothing here touches due_at; the hold columns are cleared with the stamp.
# Hand-off (issue 14): each candidate set passes over items whose excluded_reviewer_ids name
# the claimer (they decided earlier in the item's escalation chain, or abandoned it before it
# was moved), so the item goes to a second person; `<> ALL` of the empty list (every item
# that is not an escalation) is true. A trigger refuses such a lease anyway (migration 0015).
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
# plan the server caches for the prepared statement (managers.run_together) is made for one row.
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

# The fenced close alone, as bench/cycle_bound.py replays a decide step by step; the service
# decides with CLOSE_AND_RECORD_DECISION. Zero rows means the token no longer matches (expired
# and re-claimed, released, or decided already). A late submit whose token still matches is
# accepted, because nobody else can have claimed the row while the token was unchanged.
# Returns the evidence, and the queue's slug and escalation target.
# Like RENEW_LEASE and RELEASE_LEASE it names the item with the queue the caller found it in
# (one shard when distributed by queue, docs/scaling.md); an item moved since matches nothing.
CLOSE_ITEM = """
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
             FROM queue_app_evidencerule AS e WHERE e.queue_id = i.queue_id) AS evidence_rules
"""

# Record a decision with its outbox row and its audit event, in the caller's transaction (in
# CLOSE_AND_RECORD_DECISION, the same statement as the close). The reason is
# looked up by its code among the queue's active codes for this verdict (unique per queue,
# verdict and code); a code outside that set gives NULL, which the column refuses (NOT NULL):
# the statement, and so the transaction, fail, and the service reports an invalid reason.
# Failing rather than inserting nothing lets the service send the COMMIT along with this
# statement. The chain hash and sequence are filled by the
# insert trigger, and so is reviewer_username (the reviewer's username now, in this same
# statement, whatever the writer sends: migration 0007), as is the four-eyes check of an
# overturn. The apply workers' wake-up follows the COMMIT (WAKE_APPLY_WORKERS, migration 0019).
# {source} is a CTE named src with one row, or none, of: item_id, queue_id, needs_check,
# qa_sampled, due_at (the deadline a check carries, NULL otherwise). No row: nothing is written.
# {returning}: more of src's columns to return.
_RECORD_DECISION = """
WITH {source}, decision AS (
    INSERT INTO queue_app_decision
           (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
            supersedes_id, corrected_verdict, lease_token, created_at, chain_hash)
    SELECT src.item_id, src.queue_id, %(reviewer_id)s, %(verdict)s::text,
           (SELECT r.id FROM queue_app_reasoncode AS r
             WHERE r.queue_id = %(queue_id)s AND r.verdict = %(verdict)s::text
               AND r.code = %(reason_code)s AND r.retired_at IS NULL),
           %(evidence_hash)s, %(note)s, %(supersedes_id)s, %(corrected_verdict)s,
           %(lease_token)s, now(), ''
      FROM src
 RETURNING *
), job AS (
    -- A decision that needs a check gets its effect job only when a checker confirms it
    -- (sql_lanes.CONFIRM_CHECK).
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
SELECT decision.*, src.needs_check AS awaiting_check{returning},
       r.id AS reason__id, r.queue_id AS reason__queue_id, r.verdict AS reason__verdict,
       r.code AS reason__code, r.label AS reason__label, r.retired_at AS reason__retired_at,
       r.is_default AS reason__is_default
  FROM decision JOIN queue_app_reasoncode AS r ON r.id = decision.reason_code_id, src
"""

# A decision whose checks were made before it: an overturn, which closes nothing (and the
# benchmark's replay, after CLOSE_ITEM). An item whose decision needs a check waits for it (not
# claimable for review): the UPDATE reads the deadline the check will carry from the row it
# writes, so no other read.
INSERT_DECISION = _RECORD_DECISION.format(
    source="""awaiting AS (
    UPDATE queue_app_reviewitem SET state = 'awaiting_check'
     WHERE id = %(item_id)s AND queue_id = %(queue_id)s AND %(needs_check)s
 RETURNING due_at
), src AS (
    SELECT %(item_id)s::bigint AS item_id, %(queue_id)s::bigint AS queue_id,
           %(needs_check)s::boolean AS needs_check, %(qa_sampled)s::boolean AS qa_sampled,
           (SELECT due_at FROM awaiting) AS due_at
)""",
    returning="",
)

# The whole decide in one statement: the fenced close and the insert of the decision, with
# every rule of the fence as a condition on the close. It closes the item, and so writes
# anything, only when
# - the lease token still fences the item for this reviewer, in the queue the caller found it
#   in (an item moved since matches nothing);
# - the reviewer may still review the queue (access can be revoked while a lease is open);
# - the evidence hash the form carries equals the item's stored one: the hash of its evidence
#   as stored, which every writer of evidence keeps (an item without one is refused: the
#   backfill_evidence_hashes command gives one to items from before it was kept);
# - an escalation has a queue to go to;
# - the reviewer said they read the warnings (%(warnings_seen)s), or the queue's evidence rules
#   raise none on the payload (queue_app_evidence_warnings, whose naive date-times are in
#   %(time_zone)s, Django's current zone, as the item page reads them).
# Whether the decision needs a checker is the queue's policies on the payload
# (queue_app_check_needed: a policy without a path always; with one, when the number at its
# dotted path is at or above its threshold, exactly, or cannot be read). RETURNING sees the
# row as written, so the state set here says it without judging twice.
# The QA draw (lanes.qa_draw, an HMAC keyed from SECRET_KEY over the item and the token, so
# the key never leaves Python) is sent as %(qa_draw)s, NULL for verdicts never drawn; the
# comparison is lanes.draw_samples' in exact numerics: draw * 10000 < rate * 100 * 2**64.
# Zero rows: nothing was written; the service then reads the row (EXPLAIN_REFUSED_DECISION) to
# say which condition failed. The item goes straight to its final state: one UPDATE of the row
# in the statement (two writes of one row in one statement are not allowed). Its queue pins
# every table it reads or writes to one shard (docs/scaling.md).
CLOSE_AND_RECORD_DECISION = _RECORD_DECISION.format(
    source="""src AS (
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
       AND """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """
 RETURNING i.id AS item_id, i.queue_id, i.state = 'awaiting_check' AS needs_check,
           (i.state = 'decided'
            AND %(qa_draw)s::numeric * 10000 < q.qa_rate * 100 * 18446744073709551616)
           IS TRUE AS qa_sampled,
           CASE WHEN i.state = 'awaiting_check' THEN i.due_at END AS due_at,
           q.slug AS queue_slug, q.name AS queue_name, q.lease_ttl AS queue_lease_ttl,
           q.release_skip AS queue_release_skip,
           q.escalation_threshold AS queue_escalation_threshold,
           q.escalation_queue_id AS queue_escalation_queue_id
)""",
    # What the console's Next claim needs of the queue, so that a decide and the claim after
    # it read the queue in no round trip of their own (console/views.py, item_decide).
    returning=""", src.queue_slug,
       src.queue_id AS queue__id, src.queue_slug AS queue__slug, src.queue_name AS queue__name,
       src.queue_lease_ttl AS queue__lease_ttl, src.queue_release_skip AS queue__release_skip,
       src.queue_escalation_threshold AS queue__escalation_threshold,
       src.queue_escalation_queue_id AS queue__escalation_queue_id""",
)

# Why CLOSE_AND_RECORD_DECISION wrote nothing, read after it from the row as it is now: the
# same conditions, each as a column, in the order the service names them (the lease first:
# a lease that no longer holds is told by explain_stale_lease). No row: no such item.
# Read only; the decide's conditions stay in the one statement that writes.
EXPLAIN_REFUSED_DECISION = (
    """
SELECT i.id = %(item_id)s AND i.queue_id = %(queue_id)s AND i.state = 'leased'
       AND i.lease_token = %(lease_token)s AND i.lease_owner_id = %(owner_id)s AS holds_lease,
       """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """ AS allowed,
       i.evidence_hash IS NOT DISTINCT FROM %(evidence_hash)s AS same_evidence,
       (%(verdict)s::text <> 'escalate' OR q.escalation_queue_id IS NOT NULL) AS may_escalate,
       EXISTS (SELECT 1 FROM queue_app_evidence_warnings(q.id, i.payload, %(time_zone)s::text))
           AS warns
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
 WHERE i.id = %(item_id)s
"""
)

# Move abandoned items (leased escalation_threshold times without a decision, and not under a
# live lease) to their queue's escalation queue, at higher priority, lease cleared. A late
# submit on the old token then fails the fenced close. SKIP LOCKED: an item a claimer is
# stamping right now is left for the next sweep rather than waited on.
# Hand-off (issue 14): everyone who held the item (its claimed/reclaimed events, through the
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

# Walk the per-decision chain (decisions recorded before sealing existed carry chain_seq and
# chain_hash) in order, recomputing each link with the same SQL function the old insert trigger
# used, and return the first row whose stored hash does not match (or whose sequence skips).
# Streams: one pass over the chain_seq index.
VERIFY_CHAIN = """
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
 LIMIT 1
"""

COUNT_DECISIONS = "SELECT count(*) FROM queue_app_decision"
COUNT_OUTCOMES = "SELECT count(*) FROM queue_app_laneoutcome"

# The heads of both chains and the database clock, for a signed checkpoint: the per-decision
# chain's last link (fixed since sealing began) and the last sealed batch. Two index lookups.
CHAIN_HEADS = """
SELECT now(), d.chain_seq, d.chain_hash, d.id, b.seq, b.batch_hash, b.size
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (
        SELECT chain_seq, chain_hash, id FROM queue_app_decision
         WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1
       ) AS d ON true
  LEFT JOIN LATERAL (
        SELECT seq, batch_hash, size FROM queue_app_chainbatch ORDER BY seq DESC LIMIT 1
       ) AS b ON true
"""

# The link at one position of the per-decision chain, to compare with a checkpoint.
CHAIN_LINK_AT = "SELECT chain_hash, id FROM queue_app_decision WHERE chain_seq = %(seq)s"

# The sealed batch at one position, to compare with a checkpoint.
BATCH_AT = "SELECT batch_hash, size FROM queue_app_chainbatch WHERE seq = %(seq)s"

# -- sealing -------------------------------------------------------------------------------------
# Decisions commit without a chain lock (migration 0010); the sealer places them afterwards.

# One sealer at a time, anywhere: the others skip this round instead of waiting (the lock is
# the transaction's; a sealer that dies releases it with its connection).
TRY_SEAL_LOCK = "SELECT pg_try_advisory_xact_lock(%(key)s)"
# What wants everything committed sealed before it goes on (a checkpoint) waits its turn
# instead: skipping would leave out whatever the running sealer has not committed yet.
SEAL_LOCK = "SELECT pg_advisory_xact_lock(%(key)s)"

# Take up to %(limit)s committed, unsealed entries (oldest first) off the sealer's lists and
# return each with its Merkle leaf: decisions first, then second-person outcomes (migration
# 0020) in what room the decisions leave. Up to %(outcome_share)s of the room is kept for the
# outcomes waiting, so that a stream of decisions filling every round cannot hold
# confirmations back indefinitely. One statement, one round trip a round, so an idle sealer
# reads both lists at the cost of one. An entry whose transaction has not committed yet is not
# visible here and waits for the next round: nothing is sealed before it is final. Every part
# sees the same snapshot; each LIMIT reads what the parts before it took. An entry whose row is
# gone from the log (deleted by an owner with the foreign keys off) comes back with a NULL
# leaf, not dropped: the sealer refuses the round and the list keeps it.
TAKE_UNSEALED = """
WITH kept AS MATERIALIZED (
    SELECT count(*) AS n
      FROM (SELECT 1 FROM queue_app_unsealedlaneoutcome LIMIT %(outcome_share)s) AS waiting
), decisions AS (
    DELETE FROM queue_app_unsealeddecision
     WHERE decision_id IN (SELECT decision_id FROM queue_app_unsealeddecision
                            ORDER BY decision_id LIMIT %(limit)s - (SELECT n FROM kept))
 RETURNING decision_id
), outcomes AS (
    DELETE FROM queue_app_unsealedlaneoutcome
     WHERE outcome_id IN (SELECT outcome_id FROM queue_app_unsealedlaneoutcome
                           ORDER BY outcome_id
                           LIMIT %(limit)s - (SELECT count(*) FROM decisions))
 RETURNING outcome_id
)
SELECT 0 AS part, 'decision' AS kind, decisions.decision_id AS id,
       CASE WHEN d.id IS NOT NULL THEN queue_app_decision_leaf(d) END AS leaf
  FROM decisions LEFT JOIN queue_app_decision AS d ON d.id = decisions.decision_id
UNION ALL
SELECT 1, 'outcome', outcomes.outcome_id,
       CASE WHEN o.task_id IS NOT NULL THEN queue_app_laneoutcome_leaf(o) END
  FROM outcomes LEFT JOIN queue_app_laneoutcome AS o ON o.task_id = outcomes.outcome_id
 ORDER BY part, id
"""

# The batch a new seal chains to: the last batch, or (for the first batch) the head of the
# per-decision chain.
SEAL_PREDECESSOR = """
SELECT coalesce(
         (SELECT seq FROM queue_app_chainbatch ORDER BY seq DESC LIMIT 1), 0) AS seq,
       coalesce(
         (SELECT batch_hash FROM queue_app_chainbatch ORDER BY seq DESC LIMIT 1),
         (SELECT chain_hash FROM queue_app_decision
           WHERE chain_seq IS NOT NULL ORDER BY chain_seq DESC LIMIT 1),
         '') AS hash
"""

# Record a sealed batch and its entries in one statement: one row per decision at its leaf
# position, then one per second-person outcome, its positions following the decisions'.
INSERT_BATCH = """
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
)
SELECT seq FROM batch
"""

# Every sealed batch with its entries, in order, for verification: each entry (a decision, or
# a second-person outcome named by its task) with its leaf as sealed and as recomputed from
# the row now (an altered row no longer matches its sealed leaf; altered sealed leaves no
# longer give the batch's root). Streams through a server-side cursor.
SEALED_LEAVES = """
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
       ) AS e ON e.batch_id = b.seq
 ORDER BY b.seq, e.position
"""

# The last link of the per-decision chain, which the first sealed batch chains to.
OLD_CHAIN_HEAD_HASH = """
SELECT coalesce((SELECT chain_hash FROM queue_app_decision WHERE chain_seq IS NOT NULL
                  ORDER BY chain_seq DESC LIMIT 1), '') AS hash
"""

# A sealed entry's batch and the sealed leaves of that batch (its decisions' and its
# outcomes'), for an inclusion proof: the entry is a decision (%(decision_id)s) or a
# second-person outcome (%(outcome_id)s, its lane task); the other parameter is NULL.
INCLUSION_PROOF = """
WITH target AS (
    SELECT batch_id, position FROM queue_app_chainentry WHERE decision_id = %(decision_id)s
    UNION ALL
    SELECT batch_id, position FROM queue_app_laneoutcomeentry WHERE outcome_id = %(outcome_id)s
)
SELECT t.batch_id AS seq, t.position, b.size, b.merkle_root, b.batch_hash,
       (SELECT array_agg(all_entries.leaf ORDER BY all_entries.position)
          FROM (SELECT e2.leaf, e2.position FROM queue_app_chainentry AS e2
                 WHERE e2.batch_id = t.batch_id
                UNION ALL
                SELECT o2.leaf, o2.position FROM queue_app_laneoutcomeentry AS o2
                 WHERE o2.batch_id = t.batch_id) AS all_entries) AS leaves
  FROM target AS t JOIN queue_app_chainbatch AS b ON b.seq = t.batch_id
"""

# Decisions neither in the old chain, nor sealed, nor waiting to be, and second-person outcomes
# neither sealed nor waiting: someone removed the row that queued them. Entries waiting on the
# sealer's lists whose decision or outcome is gone: someone removed the row itself. Also the oldest
# decision still waiting, to tell a stopped sealer from a busy one.
UNACCOUNTED_DECISIONS = """
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
  (SELECT min(u.decision_id) FROM queue_app_unsealeddecision AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_decision AS d WHERE d.id = u.decision_id)
  ) AS first_vanished,
  (SELECT min(u.outcome_id) FROM queue_app_unsealedlaneoutcome AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_laneoutcome AS o WHERE o.task_id = u.outcome_id)
  ) AS first_vanished_outcome,
  (SELECT count(*) FROM queue_app_unsealeddecision) AS waiting,
  (SELECT min(d.created_at) FROM queue_app_unsealeddecision AS u
     JOIN queue_app_decision AS d ON d.id = u.decision_id) AS oldest_waiting
"""

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
# item's story says (queue_app/story.py): one awaiting its check may yet be returned, and
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


# -- the hot path, for a schema distributed by queue ---------------------------------------------
# Every statement a reviewer's or worker's cycle runs (claim, renew, release, decide). Each one
# names its queue in every read or write of a table that would be distributed by queue_id, so
# on Citus it is routed to one shard (docs/scaling.md, "1,000x today").
# tests/test_single_shard.py parses each with PostgreSQL's own parser and fails if one loses
# its queue_id predicate; a statement added to the cycle belongs here.
HOT_PATH = (
    "MAY_REVIEW_QUEUE",
    "SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE",
    "SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS",
    "RENEW_OWN_LIVE_LEASE",
    "RENEW_OWN_LIVE_LEASE_FOR_PAGE",
    "CLAIM_NEXT_ITEM",
    "CLAIM_NEXT_ITEM_FOR_PAGE",
    "CLAIM_ITEMS",
    "RENEW_LEASE",
    "RELEASE_LEASE",
    "CLOSE_ITEM",
    "INSERT_DECISION",
    "CLOSE_AND_RECORD_DECISION",
)

# The tables distribution by queue_id would shard (docs/scaling.md); the rest (queues, reason
# codes, users, groups, API clients) become reference tables copied to every node.
DISTRIBUTED_TABLES = (
    "queue_app_reviewitem",
    "queue_app_decision",
    "queue_app_effectjob",
    "queue_app_applieddecision",
    "queue_app_itemevent",
    "queue_app_lanetask",
    "queue_app_laneoutcome",
)

# -- deadlines, holds and the subject's history (issue 15) ---------------------------------------
# The deadline rule: the clock pauses while an item is held. HOLD_ITEM pushes due_at back by the
# whole hold (hold_until - now) when the hold starts, so a held item's due_at is already the
# deadline it will have when it comes back, and the claim that takes it back touches nothing.
# A hold ended early (RESUME_HELD_ITEM, on evidence replacement) gives the unused part back.
# Either way due_at moves by exactly the time the item spent on hold.

# Put a leased item on hold, fenced by its token like every write of a holder: zero rows means
# the lease is no longer the caller's (StaleLease), the resume time is outside
# (now, now + the queue's max_hold], or the caller may no longer review the queue (access
# revoked while the lease was open; checked here, not only before, as the decide path does)
# (the service checks the last two first, to say which). The reason
# is looked up among the queue's active hold codes; a code outside that set gives NULL, which
# item_hold_columns_match_state refuses, so nothing is written (InvalidHoldReason). The lease
# that ends in a hold is not counted towards abandonment (lease_count goes back down by one).
# The held event records the deadline before and after, for the timeline, and the lease token
# that fenced the hold, so that a retry of this same hold is recognised (find_completed_hold).
HOLD_ITEM = (
    """
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
       AND """
    + _MAY_REVIEW.format(queue="i.queue_id")
    + """
 RETURNING i.id, i.hold_until, i.held_at, i.due_at, i.hold_reason_id
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'held', %(owner_id)s, now(),
           jsonb_build_object('reason_code', %(reason_code)s::text, 'hold_until', hold_until,
                              'due_at_before', due_at - (hold_until - held_at),
                              'due_at', due_at, 'lease_token', %(lease_token)s::text)
      FROM held
)
SELECT * FROM held
"""
)

# Bring a held item back to the queue now (its evidence was replaced: what it waited for has
# arrived), giving back the part of the hold not used. A hold already past its time (due, not
# yet claimed) used all of it: due_at stays. The caller holds the row lock (replace_evidence's
# SELECT FOR UPDATE), so "old" is the row as it is; zero rows means it was not held.
RESUME_HELD_ITEM = """
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
SELECT * FROM resumed
"""

# The other items of one subject, newest first, in queues the viewer may read (the access
# rule, _MAY_READ, per row), each with the decision that stands (queue_app_itemstory: never a
# returned decision, one awaiting its check, or one an overturn replaced) and that decision's
# reason and author. One statement on item_subject_key; the LIMIT bounds both the rows and the
# access checks' work to the subject's own items. %(exclude_id)s is the item being shown (0:
# none).
SUBJECT_HISTORY = (
    """
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
   AND """
    + _MAY_READ.format(queue="i.queue_id")
    + """
 ORDER BY i.created_at DESC
 LIMIT %(limit)s
"""
)

# -- the console's item page (console/views.py) ---------------------------------------------------
# The item page and every form posted from it but the decide first find the item, its queue and
# whether the user may review that queue (the one access rule, _MAY_REVIEW, as a column of the
# row): one statement, by primary key. It replaces an ORM query whose compilation cost more
# client CPU than the page's own work (bench/NOTES.md, B8), and then a pipeline of two. Like
# the API's by-id routes (docs/scaling.md) it reads by id, not by queue: on a schema
# distributed by queue_id it is an indexed lookup on every shard, and the writes that follow
# name the queue it returns. {queue_columns} is the queue's every column as
# "queue__<column>": managers.ReviewItemManager.with_queue_and_access writes it from the model,
# so a column added to the queue is read here too.
ITEM_WITH_QUEUE_AND_ACCESS = (
    """
SELECT i.*, {queue_columns}, """
    + _MAY_REVIEW.format(queue="i.queue_id")
    + """ AS may_review
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
 WHERE i.id = %(item_id)s
"""
)

# The console's Next item: the queue by its slug and whether the user may review it (what the
# claim asks again in its own statement), in one prepared statement; no row for no such queue.
QUEUE_BY_SLUG_WITH_ACCESS = (
    """
SELECT q.*, """
    + _MAY_REVIEW.format(queue="q.id")
    + """ AS may_review
  FROM queue_app_queue AS q
 WHERE q.slug = %(slug)s
"""
)

# The console's decide: the queue an item is in and whether the user may review it, without the
# item's row (the decide statement reads that itself, fenced); no row for no such item.
QUEUE_OF_ITEM_WITH_ACCESS = (
    """
SELECT q.*, """
    + _MAY_REVIEW.format(queue="q.id")
    + """ AS may_review
  FROM queue_app_queue AS q
 WHERE q.id = (SELECT queue_id FROM queue_app_reviewitem WHERE id = %(item_id)s)
"""
)

# The rest of what an item's page shows, sent with the item's own read in one round trip
# (services/item_page.py), before its queue is known to Python: each statement finds the
# queue (and the lease holder) through the item. What they return for an item the user may not
# see is dropped unread, with the item (the 404 is decided from the item's row).
_QUEUE_OF_PAGE_ITEM = (
    "(SELECT pi.queue_id FROM queue_app_reviewitem AS pi WHERE pi.id = %(item_id)s)"
)

# Decisions oldest first, as the history table lists them, each with the name of who recorded
# it when it predates reviewer_username (migration 0007): later decisions carry the name as it
# was when they were made, and need no join. The name only (reviewer__*), never the rest of
# the user's row (the password hash, above all). Each with its status from the item's one story
# (queue_app_decisionstatus), so a returned decision is never shown as if it stood.
ITEM_DECISIONS = """
SELECT d.*, s.status AS story_status,
       u.id AS reviewer__id, u.username AS reviewer__username,
       u.first_name AS reviewer__first_name, u.last_name AS reviewer__last_name
  FROM queue_app_decision AS d
  JOIN queue_app_decisionstatus AS s ON s.decision_id = d.id
  LEFT JOIN auth_user AS u ON u.id = d.reviewer_id AND d.reviewer_username IS NULL
 WHERE d.item_id = %(item_id)s
 ORDER BY d.id
"""

# The checkers' returns of the item's decisions, with the note the maker (whoever decides the
# item again) must read: the page shows each under the decision it returned. By the task's
# item index; an item has a check per decision at most.
PAGE_ITEM_RETURNS = """
SELECT t.decision_id, o.actor_username, o.note, o.created_at
  FROM queue_app_lanetask AS t
  JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
 WHERE t.item_id = %(item_id)s AND t.kind = 'check' AND o.result = 'returned'
 ORDER BY t.decision_id
"""

# The lease holder's name, whoever holds the item: the page shows it only to someone else than
# the holder. Their name only: the page has no use for the rest of their row (the password
# hash, above all).
PAGE_ITEM_LEASE_HOLDER = """
SELECT u.id, u.username, u.first_name, u.last_name
  FROM auth_user AS u
 WHERE u.id = (SELECT pi.lease_owner_id FROM queue_app_reviewitem AS pi
                WHERE pi.id = %(item_id)s AND pi.state = 'leased')
"""

# The reason codes the page names: those of the item's queue (the decision form offers the
# active ones for the review verdicts, in this order) and those of its decisions, which a
# decision made before the item moved queues (escalation) may hold from another queue.
PAGE_ITEM_REASON_CODES = f"""
SELECT r.*
  FROM queue_app_reasoncode AS r
 WHERE r.queue_id = ANY (ARRAY(SELECT {_QUEUE_OF_PAGE_ITEM}::bigint
                               UNION SELECT d.queue_id FROM queue_app_decision AS d
                                      WHERE d.item_id = %(item_id)s))
 ORDER BY r.verdict, r.label
"""

# The queue's evidence rules, in the order the page lists the warnings they raise.
PAGE_ITEM_EVIDENCE_RULES = f"""
SELECT e.* FROM queue_app_evidencerule AS e WHERE e.queue_id = {_QUEUE_OF_PAGE_ITEM} ORDER BY e.id
"""

# The hold reasons a holder may choose now, by label (services.hold_reasons_for's order).
PAGE_ITEM_HOLD_REASONS = f"""
SELECT h.* FROM queue_app_holdreason AS h
 WHERE h.queue_id = {_QUEUE_OF_PAGE_ITEM} AND h.retired_at IS NULL
 ORDER BY h.label
"""

# -- every signed-in request (queue_app/identity/sessions.py and backends.py) ---------------------
# Whether the user u holds a staff power: staff, superuser, or any Django permission, granted
# directly or through a group. Every permission here grants an administrative act (overturn,
# retrying effect jobs, configuration, access, exports); a reviewer's access is membership of a
# queue's reviewer groups, never a permission, so "any permission" needs no list to keep current.
_HOLDS_POWER = """(
       u.is_staff OR u.is_superuser
       OR EXISTS (SELECT 1 FROM auth_user_user_permissions AS up WHERE up.user_id = u.id)
       OR EXISTS (SELECT 1 FROM auth_user_groups AS ug
                    JOIN auth_group_permissions AS gp ON gp.group_id = ug.group_id
                   WHERE ug.user_id = u.id))"""

# The two reads Django makes before any view, the session and the user it names, in one: the
# same rows and conditions as Django's own (a session not yet expired by the web server's
# clock, the user by primary key), bound on the server and prepared after a few runs, so no
# request compiles an ORM query for them. {user_columns}: the user model's columns, each as
# "user__<column>"; no user row (none named, or deleted since) leaves them NULL. USER_ROW is
# the user alone, for a session whose row names no user or another one than its data.
#
# Each also says whether the user holds a staff power (_HOLDS_POWER), which the second-factor
# gate asks on every request (identity/mfa.holds_staff_power): read with the user, it costs no
# round trip of its own.
SESSION_WITH_USER = (
    """
SELECT s.session_key, s.session_data, s.expire_date, s.user_id, {user_columns},
       """
    + _HOLDS_POWER
    + """ AS user__holds_power
  FROM queue_app_session AS s
  LEFT JOIN auth_user AS u ON u.id = s.user_id
 WHERE s.session_key = %(session_key)s AND s.expire_date > %(now)s
"""
)

USER_ROW = (
    "SELECT u.*, " + _HOLDS_POWER + " AS holds_power FROM auth_user AS u WHERE u.id = %(user_id)s"
)

# Whether one user holds a staff power, for a user object that was not read with its session.
USER_HOLDS_POWER = (
    "SELECT " + _HOLDS_POWER + " AS holds_power FROM auth_user AS u WHERE u.id = %(user_id)s"
)
