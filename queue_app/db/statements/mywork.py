"""The statements behind My work. Each reads one reviewer's rows through the index
decision_reviewer_recent (reviewer_id, created_at DESC) and a bounded time window, so its cost
follows that reviewer's recent work, never the size of the decision log."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "MY_DECISION_COUNTS": (
        "One reviewer's verdicts per queue over 30 days, with today's and the week's."
    ),
    "MY_HANDLING_TIME": "One reviewer's handling time per queue over 7 and 30 days.",
    "MY_HOLDS": "The items a reviewer put on hold that are still held, soonest back first.",
}

# Reviewer verdicts per queue and verdict over the last 30 days, with today's and the last 7
# days' counts beside them, and how many were later overturned. A verdict its check still holds
# back, or that its checker returned, is counted on a row of its own (held: the status), never
# as one that stands; the status is the item's one story (queue_app_decisionstatus, probed by
# decision id). Overturns the reviewer made as an admin are not their verdicts.
MY_DECISION_COUNTS = """
SELECT d.queue_id, q.name AS queue_name, d.verdict,
       CASE WHEN s.status IN ('awaiting_check', 'returned') THEN s.status END AS held,
       count(*) FILTER (WHERE d.created_at >= %(today)s) AS today,
       count(*) FILTER (WHERE d.created_at >= %(week)s) AS week,
       count(*) AS month,
       count(*) FILTER (WHERE s.status = 'overturned') AS overturned
  FROM queue_app_decision AS d
  JOIN queue_app_queue AS q ON q.id = d.queue_id
  JOIN queue_app_decisionstatus AS s ON s.decision_id = d.id
 WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(month)s AND d.verdict <> 'overturn'
 GROUP BY d.queue_id, q.name, d.verdict, held
 ORDER BY q.name, d.verdict, held NULLS FIRST
"""

# Handling time exactly as /ops/ measures it (ops_sql.TIME_TO_DECISION): from the
# claim the item was decided under (its last claimed/reclaimed event before the decision) to the
# decision; here for one reviewer, per queue, over 7 and 30 days. queue_id NULL (the ROLLUP
# row) is every queue together.
MY_HANDLING_TIME = """
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
  FROM queue_app_decision AS d
 CROSS JOIN LATERAL (
        SELECT e.at
          FROM queue_app_itemevent AS e
         WHERE e.item_id = d.item_id AND e.kind IN ('claimed', 'reclaimed')
           AND e.at <= d.created_at
         ORDER BY e.at DESC
         LIMIT 1
       ) AS c
 WHERE d.reviewer_id = %(reviewer)s AND d.created_at >= %(month)s AND d.verdict <> 'overturn'
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
