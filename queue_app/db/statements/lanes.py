"""The statements of the second-person lanes (checks, QA reviews, adjudications), named.

Same conventions as the other statement modules: psycopg named placeholders, one comment per
statement on what it does and why it is safe. queue_app/services/lanes.py decides when.

Every lane shares one claim (CLAIM_LANE_TASK, parametrised by kind) and one fence: a write
that finishes a task names its lease token and holder, changes nothing when they no longer
match, and inserts the outcome in the same statement.
"""

from __future__ import annotations

from queue_app.db.statements.access import _MAY_REVIEW

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "CLAIM_LANE_TASK": (
        "Next check / QA / adjudication: renew one's own lease or claim the next task."
    ),
    "RELEASE_LANE_TASK": "Give a lane task back, fenced by its token.",
    "RENEW_LANE_TASK": (
        "Extend a lane task's lease, fenced by its token, if the holder may still work it."
    ),
    "LOCK_LANE_TASK": (
        "Lock a lane task and its item for a fenced finish, with what the finish checks."
    ),
    "CONFIRM_CHECK": "Confirm a check: outcome, effect job, item decided, QA draw and event.",
    "RETURN_CHECK": "Return a check: outcome, and the item back to pending in a new review round.",
    "RECORD_QA_REVIEW": "Record a blind QA review's verdict and reason.",
    "FINISH_ADJUDICATION": "Close an adjudication with its outcome.",
    "FINISH_APPEAL": "Decide an appeal: its outcome, the outcome notice's outbox row, the event.",
    "LANES_FOR_USER": "The console home's lanes for one user, with what waits in each.",
    "LANE_BACKLOG_NAMED": (
        "Open lane tasks per queue and lane, with the queue's name and the clock."
    ),
    "CHECKS_FINISHED": "Checks finished in the window per queue, confirmed and returned.",
    "QA_REVIEWS_IN_WINDOW": "Every QA review in the window with the decision it sampled.",
}

# Whether %(owner_id)s holds can_overturn, decided as Django's ModelBackend decides it but read
# in the statement that relies on it: an active user who is a superuser or holds the permission
# directly or through a group. A permission removed while a page is open is seen by the next
# write, not only by the next request's has_perm (whose answer is cached per request).
_CAN_OVERTURN = """EXISTS (
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
)"""

# Who may hold or finish a task of lane {kind} in queue {queue}, in the statement that claims,
# renews or locks it: a person (an API client's service user never works a lane: machines
# decide, people confirm) who may review the queue (checks, QA) or overturn (adjudication,
# appeals: a reversal is an overturn).
# The services ask the same first, to refuse in plain words; this is the check a revocation
# landing between that question and the write cannot slip past.
_MAY_WORK_LANE = (
    "(NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = %(owner_id)s)\n"
    "     AND CASE WHEN {kind} IN ('adjudication', 'appeal') THEN "
    + _CAN_OVERTURN.replace("{", "{{").replace("}", "}}")
    + "\n              ELSE "
    + _MAY_REVIEW
    + " END)"
)

# Whether lane task t is one the person of `me` (a CTE with their principal) may take, by the
# rule the lanetask trigger enforces (queue_app_lane_barred: not a decision they made, checked,
# QA-reviewed, overturned or otherwise have another part in the chain of), so a lane never
# hands out, nor counts as waiting, a task its trigger would refuse. The stored principals
# (maker, QA reviewer, checker, filled by the task's insert trigger) are tested first, as
# columns: most barred tasks fail there and the function, an index read of the chain, runs
# only on a row that passed them. Wrapped in coalesce() so the planner cannot estimate them
# (see CLAIM_LANE_TASK); `me` is read through scalar subqueries.
_NOT_BARRED_BY_COLUMN = """coalesce(t.maker_principal_id <> (SELECT principal FROM me), true)
       AND coalesce(t.second_principal_id <> (SELECT principal FROM me), true)
       AND coalesce(t.checker_principal_id <> (SELECT principal FROM me), true)"""

_NOT_BARRED = (
    _NOT_BARRED_BY_COLUMN
    + """
       AND NOT queue_app_lane_barred(t, %(owner_id)s)"""
)

# Next check / Next QA / Next adjudication: renew the caller's own live lease in this lane if
# they hold one (a second tab, a reload), otherwise claim the open task whose lease is absent or
# expired with the earliest deadline (a check's item's, copied at queueing; none last), then the
# oldest. Safe because:
# - the candidate is chosen with FOR UPDATE SKIP LOCKED, so concurrent claimers walk past a
#   task another is stamping instead of waiting or taking it twice;
# - `picked` is MATERIALIZED with its LIMIT inside (the planner cannot inline and re-run it);
# - it walks lanetask_open_due_claim (queue, kind, due_at, created_at, id) WHERE state = 'open',
#   in the index's own order (ascending, NULLs last, as ORDER BY below): done tasks
#   are never read. Live leases stay in the index; a claim walks past at most one per working
#   second person (a handful), so unlike review items they need no state of their own;
# - tasks the claimer is barred from are passed over by the trigger's own rule (_NOT_BARRED):
#   the walk calls it once per candidate that passes the stored principals, normally the
#   first. A part committed after the statement's snapshot (their own overturn in another
#   tab) is seen by the trigger, which refuses; claim_lane_task then claims once more;
# - the outer WHERE re-checks the row (EvalPlanQual re-evaluates only the outer conditions):
#   a task finished or re-leased while we waited for its lock is not stamped.
# The gate is _MAY_WORK_LANE: checks and QA need the queue's review access, adjudication
# can_overturn, both read in the statement.
CLAIM_LANE_TASK = (
    """
WITH me AS MATERIALIZED (
    SELECT queue_app_principal(%(owner_id)s) AS principal,
           """
    + _MAY_WORK_LANE.format(kind="%(kind)s::text", queue="%(queue_id)s")
    + """ AS allowed
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
       AND """
    + _NOT_BARRED
    + """
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
RETURNING t.*, target.renewed
"""
)

# Give a task back (fenced): it takes its place in its lane again (by deadline, then age) for
# everyone else.
RELEASE_LANE_TASK = """
UPDATE queue_app_lanetask
   SET lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL
 WHERE id = %(task_id)s AND queue_id = %(queue_id)s AND state = 'open'
   AND lease_token = %(lease_token)s AND lease_owner_id = %(owner_id)s
RETURNING id
"""

# Extend a task's lease while its page is open (the page's heartbeat), fenced by the token: a
# tab whose task was taken over renews nothing. A lapsed lease nobody re-claimed is still the
# holder's, as for review items (leases_sql.RENEW_LEASE). Who may hold it is checked again here, as
# the claim checks it (_MAY_WORK_LANE). The lease TTL is the queue's, as when it was claimed.
RENEW_LANE_TASK = (
    """
UPDATE queue_app_lanetask AS t
   SET lease_expires = now() + q.lease_ttl
  FROM queue_app_queue AS q
 WHERE t.id = %(task_id)s AND t.queue_id = %(queue_id)s AND q.id = t.queue_id
   AND t.state = 'open'
   AND t.lease_token = %(lease_token)s AND t.lease_owner_id = %(owner_id)s
   AND """
    + _MAY_WORK_LANE.format(kind="t.kind", queue="t.queue_id")
    + """
RETURNING t.lease_expires
"""
)

# The task a fenced finish is about, with what the service must check before writing: the
# item's evidence now, the decision's verdict, reason and evidence hash. Locks the task and the
# item (in that order, the order every finish takes): a confirmation racing a return of the
# same task waits here, then finds the task done (the WHERE is re-checked) and gets no row.
# `allowed` is whether the holder may still work the lane (_MAY_WORK_LANE), read after the
# locks are granted: the service rolls back when they may not, so a lease outlives a
# revocation without a finish doing so.
LOCK_LANE_TASK = (
    """
SELECT t.id, t.kind, t.queue_id, t.item_id, t.decision_id, t.lease_token,
       i.state AS item_state, i.subject, i.payload, i.attachments, i.suggestion,
       d.verdict, d.reason_code_id, d.evidence_hash, d.lease_token AS decision_lease_token,
       d.reviewer_id AS maker_id, q.qa_rate,
       d.suggestion_view = 'automatic' IS TRUE AS automatic, q.auto_decide_qa_rate,
       """
    + _MAY_WORK_LANE.format(kind="t.kind", queue="t.queue_id")
    + """ AS allowed
  FROM queue_app_lanetask AS t
  JOIN queue_app_reviewitem AS i ON i.id = t.item_id
  JOIN queue_app_decision AS d ON d.id = t.decision_id
  JOIN queue_app_queue AS q ON q.id = t.queue_id
 WHERE t.id = %(task_id)s AND t.queue_id = %(queue_id)s AND t.kind = %(kind)s::text
   AND t.state = 'open'
   AND t.lease_token = %(lease_token)s AND t.lease_owner_id = %(owner_id)s
   AND i.queue_id = %(queue_id)s AND d.queue_id = %(queue_id)s
   FOR UPDATE OF t, i
"""
)

# The fenced finish every outcome shares: mark the task done and write its outcome, both only
# if the token and holder still match. {more} adds the kind's own effects as further CTEs
# reading `done` (and `outcome`), so each finish is one statement.
_FINISH = """
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
           {reason}, %(note)s::text, %(overturn_id)s::bigint, now()
      FROM done
 RETURNING *
){more}
SELECT o.*, d.item_id, d.decision_id, d.queue_id
  FROM outcome AS o JOIN done AS d ON d.id = o.task_id
"""

_NO_REASON = "NULL::bigint"

# Confirm a check: the outcome, the maker's effect job (the worker then applies the maker's
# verdict exactly once), the item decided, the QA task if the decision was drawn for QA, and
# the audit event, in one statement. The service has verified the evidence under LOCK_LANE_TASK.
# The item's decided_at becomes the confirmation's time: its outcome is final only now, and its
# deadline ran until now (the maker's time stays on the decision row).
CONFIRM_CHECK = _FINISH.format(
    reason=_NO_REASON,
    more="""
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
)""",
)

# Return a check: the outcome (a note is required: laneoutcome_return_has_note), and the item
# back to pending in a new review round with its lease count reset, for a new decision (which
# again needs a check). No effect job is ever written for the returned decision. A returned
# overturn leaves the decision it would have superseded standing: the item is decided again,
# in the same round.
RETURN_CHECK = _FINISH.format(
    reason=_NO_REASON,
    more="""
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
)""",
)

# Record a blind QA review: the second verdict and reason (looked up among the queue's active
# codes for that verdict; outside that set it is NULL and the check constraint fails the
# statement). The outcome trigger compares it with the sampled decision; a verdict that
# disagrees opens an adjudication task naming this QA task and its reviewer.
RECORD_QA_REVIEW = _FINISH.format(
    reason="""(SELECT r.id FROM queue_app_reasoncode AS r
              WHERE r.queue_id = done.queue_id AND r.verdict = %(verdict)s::text
                AND r.code = %(reason_code)s AND r.retired_at IS NULL)""",
    more="""
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
)""",
)

# Close an adjudication: upheld, or overturned (the overturn decision, written just before in
# the same transaction by services.overturn_decision, is named).
FINISH_ADJUDICATION = _FINISH.format(
    reason=_NO_REASON,
    more="""
, events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT item_id, 'adjudicated', %(owner_id)s, now(),
           jsonb_build_object('decision_id', decision_id, 'task_id', id,
                              'result', %(result)s::text, 'overturn_id', %(overturn_id)s::bigint)
      FROM done
)""",
)

# Decide an appeal: upheld, overturned (the overturn, written just before in the same
# transaction by services.overturn_decision, is named) or closed; the outcome notice to the
# affected person is queued in the same statement, so it exists exactly when the outcome does
# (one per appeal: appealnotice's unique appeal), and the item's log says so.
FINISH_APPEAL = _FINISH.format(
    reason=_NO_REASON,
    more="""
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
)""",
)

# The second person's path: each statement finds its task by id *and* its queue (the console
# passes the queue of the task it shows), and reads or writes the item and decision of that
# queue only, so with the tables distributed by queue_id (docs/scaling.md) each stays on one
# shard. tests/test_single_shard.py checks these with HOT_PATH.
HOT_PATH = (
    "CLAIM_LANE_TASK",
    "RELEASE_LANE_TASK",
    "RENEW_LANE_TASK",
    "LOCK_LANE_TASK",
    "CONFIRM_CHECK",
    "RETURN_CHECK",
    "RECORD_QA_REVIEW",
    "FINISH_ADJUDICATION",
    "FINISH_APPEAL",
)

# The console home's lanes for one user, in one statement: per queue and lane the user may
# work, the open tasks they may take (the claim's own test: the stored principals, then
# queue_app_lane_barred), how many are leased now, the oldest, and whether the lane is set up at
# all (a check policy, a QA rate) so that an idle, unconfigured lane is not listed. Checks and
# QA: the queues the user reviews (%(queue_ids)s, which the home page has read already).
# Adjudication: every queue, for a holder of can_overturn (_CAN_OVERTURN, as the claim asks).
# An API client's service user gets none.
# The count reads every open task, so the function runs only on tasks of an item the user
# has a part in (`parts`: a decision by them or their API clients, a task they hold or held,
# as queue_app_part_items reads it): it bars nobody else, and once per row it would make a lane
# of 100,000 checks fifty times slower to count. `parts` is joined by hash, never probed per
# row. It is found from the open tasks' side (an index probe by item for each open task), not
# from the user's: a reviewer's past decisions grow with the history without end (tens of
# thousands after a few years: reading them all made the home page 11 times slower on
# 2,000,000 decisions, B10), the open tasks only with the lanes' backlog.
LANES_FOR_USER = (
    """
WITH me AS MATERIALIZED (
    SELECT NOT EXISTS (SELECT 1 FROM queue_app_apiclient WHERE user_id = %(owner_id)s) AS human,
           queue_app_principal(%(owner_id)s) AS principal,
           """
    + _CAN_OVERTURN
    + """ AS can_overturn
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
        AND """
    + _NOT_BARRED_BY_COLUMN
    + """
        AND (p.item_id IS NULL OR NOT queue_app_lane_barred(t, %(owner_id)s))
 GROUP BY l.queue_id, l.slug, l.name, l.qa_rate, l.kind
 ORDER BY l.name, array_position(ARRAY['check', 'qa', 'adjudication', 'appeal'], l.kind)
"""
)

# -- figures (/ops/, /metrics, doctor) -----------------------------------------------------------

# Open lane tasks per queue and lane with the queue's name, and the database clock (ages are
# judged by it). One pass over lanetask_open_due_claim.
LANE_BACKLOG_NAMED = """
SELECT q.id AS queue_id, q.slug, q.name, t.kind, count(*) AS open,
       count(*) FILTER (WHERE t.lease_expires > now()) AS leased,
       min(t.created_at) AS oldest, now() AS now
  FROM queue_app_lanetask AS t JOIN queue_app_queue AS q ON q.id = t.queue_id
 WHERE t.state = 'open'
 GROUP BY q.id, q.slug, q.name, t.kind
 ORDER BY q.name, t.kind
"""

# Checks finished in the window per queue: how many, how many returned (the return rate).
# Whole days (UTC) from the check tally (a row per day, queue, result and checker, kept by a
# trigger on each check outcome), one range read by its key; the part-day between the window's
# start and the next midnight from the outcomes (laneoutcome_kind_at), each task probed by its
# primary key: the LIMIT keeps the probe a probe (joined plainly, the planner hashed a read of
# every lane task ever made). Cost follows the tally rows of the window, not its outcomes. The
# bounds are written out, not taken from a CTE, so the planner estimates the window's rows (an
# unknown bound made it guess a third of the tally, and JIT-compile the plan: 200 ms).
CHECKS_FINISHED = """
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
 GROUP BY q.slug
"""

# Every QA review in the window with the decision it sampled: the agreement figures per queue
# and per reviewer are both computed from these rows (selectors.agreement). The window is read
# through laneoutcome_kind_at. %(reviewer_id)s (NULL = everyone) narrows them to one original
# reviewer's decisions: My work shows a reviewer their own agreement (queue_app/mywork/). It is
# asked of the task's maker (the decision's reviewer, by lanetask_matches_decision), and the
# task's own window (a QA task is done in the statement that writes its outcome: done_at is the
# outcome's created_at), so one reviewer's reviews come from lanetask_qa_maker (maker, done_at)
# and cost what that reviewer's month holds, not what the whole team's does.
QA_REVIEWS_IN_WINDOW = """
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
   AND (%(reviewer_id)s::bigint IS NULL OR t.maker_id = %(reviewer_id)s::bigint)
"""
