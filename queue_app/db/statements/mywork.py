"""The statements behind My work. Each reads one reviewer's rows (the tally, or the decisions
through decision_reviewer_recent (reviewer_id, created_at DESC)) in a bounded time window, so
its cost follows that reviewer's recent work, never the size of the decision log."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "MY_DECISION_COUNTS": (
        "One reviewer's verdicts per queue over 30 days, with today's and the week's."
    ),
    "MY_HANDLING_TIME": "One reviewer's handling time per queue over 7 and 30 days.",
    "MY_HOLDS": "The items a reviewer put on hold that are still held, soonest back first.",
    "MY_SUBJECT_SEARCH": "A reviewer's newest decisions whose subject has the words typed.",
    "MY_SEARCH_REACH": "How far back a reviewer's newest decisions a subject search reads go.",
}

# Reviewer verdicts per queue and verdict over the last 30 days, with today's and the last 7
# days' counts beside them, and how many were later overturned. A verdict its check still holds
# back, or that its checker returned, is counted on a row of its own (held: the status), never
# as one that stands; the status is the item's one story (queue_app_decisionstatus). Overturns
# the reviewer made as an admin are not their verdicts.
# Cost follows neither the history nor the window's volume: whole days are read from the tally
# (queue_app_decisiontally, a row per reviewer, day, queue and verdict, kept by a trigger); the
# part-day before each window's first whole day (%(today_day)s, %(week_day)s, %(month_day)s:
# the window's start rounded up to a UTC midnight) from the decisions by
# decision_reviewer_recent. Only decisions that can be held or overturned have their status
# read: those with a check (lanetask_check_maker) or superseded by an overturn
# (decision_overturn_at); a held one moves from the row that stands to its own.
MY_DECISION_COUNTS = """
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
 ORDER BY q.name, p.verdict, p.held NULLS FIRST
"""

# Handling time exactly as /ops/ measures it (ops_sql.TIME_TO_DECISION): from the
# claim the item was decided under (its last claimed/reclaimed event before the decision) to the
# decision; here for one reviewer, per queue, over 7 and 30 days. queue_id NULL (the ROLLUP
# row) is every queue together. Percentiles cannot be added up from a tally: they are taken
# over the newest %(sample)s decisions of the 30 days (decision_reviewer_recent, newest first),
# so the cost is bounded however much a reviewer decides; the page says when the sample is cut.
MY_HANDLING_TIME = """
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
 GROUP BY ROLLUP (d.queue_id)
"""

# The items this reviewer put on hold that are still held, soonest back first, with why, until
# when and the deadline. A held row names no owner (HOLD_ITEM ends the lease), so who held it
# is the actor of the item's latest 'held' event (written with it): the held rows are read
# through the partial index item_held_until (state = 'held' only: open holds, never history),
# each probing its own events once by item id (the index on itemevent.item_id). Cost follows
# the number of open holds, never the size of the item table or the event log; the LIMIT
# bounds the answer.
MY_HOLDS = """
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
 LIMIT %(limit)s
"""

# A subject search of one reviewer's decisions: the newest %(limit)s whose item's subject has a
# word starting with each word typed (%(words)s, a tsquery from models/subject_search.py),
# among that reviewer's newest %(scope)s decisions since %(since)s. The scope is read newest
# first through decision_reviewer_recent, each decision's item by its primary key, and the
# words are matched on the subject as read: the words index (item_subject_words) is not used,
# because it answers with every item ever bearing a word (a common first name is tens of
# thousands at ten million decisions) and its cost grew with the history. Here the cost stops
# at the scope: a common word finds its %(limit)s early, a rare one reads the whole scope.
MY_SUBJECT_SEARCH = """
SELECT s.id
  FROM (SELECT d.id, d.created_at, i.subject
          FROM queue_app_decision AS d
          JOIN queue_app_reviewitem AS i ON i.id = d.item_id
         WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(since)s
         ORDER BY d.created_at DESC, d.id DESC
         LIMIT %(scope)s) AS s
 WHERE to_tsvector('simple'::regconfig, s.subject) @@ to_tsquery('simple'::regconfig, %(words)s)
 ORDER BY s.created_at DESC, s.id DESC
 LIMIT %(limit)s
"""

# The oldest decision MY_SUBJECT_SEARCH's scope holds, and the one after it: two rows when the
# reviewer has more decisions since %(since)s than the scope (the search did not reach the
# window's start, and the page says how far back it looked), fewer when it covered the window.
# The same index, %(scope)s + 1 entries.
MY_SEARCH_REACH = """
SELECT d.created_at
  FROM queue_app_decision AS d
 WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(since)s
 ORDER BY d.created_at DESC, d.id DESC
OFFSET %(scope)s - 1
 LIMIT 2
"""
