"""The statements behind the transparency report (/ops/transparency.csv|json, export_transparency).

The counts the DSA's transparency reports ask for (Articles 15 and 24), for a period: the
restrictions decided (statements of reasons built), by category and ground, by kind of
restriction, how much of it was automated, whether the statements reached the affected person
and the Transparency Database, how long a decision took from intake, and the appeals received,
decided and reversed with the median time to decide them. Each statement answers
for every queue at once and for all of them together (GROUPING SETS: the row whose slug is NULL),
so the report costs the same few statements whatever the number of queues; a median over all
queues is a median of the rows, never of the queues' medians.

The period is half-open, `%(start)s <= created_at < %(end)s`, by the statement's created_at
(restrictions, deliveries), the decision's (handling times), or the appeal's receipt and its
outcome's created_at (appeals). All read-only: nothing here takes a
row lock or can block a reviewer or the apply worker.
"""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "TRANSPARENCY_STATEMENTS": (
        "Statements of reasons of a period per queue and in all: kinds, grounds, "
        "automation, delivery."
    ),
    "TRANSPARENCY_CATEGORIES": (
        "Restrictions of a period per queue and in all, by the statement's category and ground."
    ),
    "TRANSPARENCY_HANDLING": (
        "Decisions of a period in queues with a statement policy: counts and median intake "
        "to decision."
    ),
    "TRANSPARENCY_APPEALS": (
        "Appeals of a period per queue and in all: received, decided, reversed, pending, "
        "median time."
    ),
}

# The statements of the period with their queue and where their deliveries stand (as
# selectors/statement_figures.py counts them for /ops/: sent once every delivery is done;
# failing when the contract refused it or a delivery is dead; waiting otherwise). The ground,
# the kinds of restriction and the automation are read from the body as sent; a statement the
# contract refused may lack them and is counted as a restriction all the same.
TRANSPARENCY_STATEMENTS = """
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
 ORDER BY q.slug NULLS LAST
"""

# Restrictions of the period by category and ground as their statements say ('' when a
# statement the contract refused has none), per queue and over all queues.
TRANSPARENCY_CATEGORIES = """
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
 ORDER BY r.slug NULLS LAST, r.category, r.ground
"""

# Decisions made in the period in the queues with a statement policy whose decisions restrict:
# review decisions (restricting or not) with the median time from the item's intake to the
# decision, the same for those that restricted (a restriction statement), and overturns. In
# seconds; NULL when there is none.
TRANSPARENCY_HANDLING = """
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
 ORDER BY q.slug NULLS LAST
"""

# Appeals (models/appeals.py) as the period saw them: received in it (received_at), decided in
# it (their task's outcome's created_at: upheld, or overturned, a reversal; closed when an
# overturn replaced the decision while the appeal waited, which decides nothing), and pending at
# its end (received before the end, no outcome before it), of those past their deadline then (or
# now, for a period that has not ended).
# The median runs from receipt to an upheld or overturned outcome within the period. Only the
# appeals that can count are read: received before the end and not decided before the start.
TRANSPARENCY_APPEALS = """
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
 ORDER BY q.slug NULLS LAST
"""
