"""The statements behind the oversight figures of machine suggestions (/ops/, /metrics, export).

Both read review decisions (never overturns) of items that carried a suggestion, made in a
recent window: `created_at >= now() - %(window)s`, which the BRIN index decision_created_brin
serves (the log is append-only, so created_at follows the physical order). Each answers for
every queue at once, so the figures cost two statements whatever the number of queues.

All read-only: nothing here takes a row lock or can block a reviewer.
"""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "SUGGESTION_FOLLOWING": (
        "Decisions on suggested items by queue, reviewer, band, view; how many followed."
    ),
    "AUTOMATIC_DECISIONS_QA": "Automatic decisions per queue, and how many blind QA agreed with.",
}

# Review decisions of items with a suggestion, in the window, counted per queue, reviewer,
# confidence band of the suggestion and what the maker saw of it (suggestion_view), with how
# many followed it (suggestion_followed, filled by the decision_suggestion trigger from the item
# row). The band is width_bucket over %(band_floors)s, the lower bounds of every band but the
# first, ascending: 0 for a confidence below the first floor, k for one at or above the k-th.
# The selector folds these rows into the calibration table, the automation-bias indicator and
# the reviewers' follow rates, so one pass over the window serves all three.
SUGGESTION_FOLLOWING = """
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
 ORDER BY q.name, d.queue_id
"""

# Automatic decisions in the window per queue, and of those with a finished blind QA review,
# how many the QA reviewer's verdict agreed with (agrees_verdict, computed by the outcome's
# insert trigger from the decision row). The QA task is found through its item (lanetask_item)
# and its outcome by primary key; a decision has at most one QA review that counts: the latest.
AUTOMATIC_DECISIONS_QA = """
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
 ORDER BY q.name, d.queue_id
"""
