"""The statements behind the appeal figures (/ops/, /metrics).

Read-only: nothing here takes a row lock or can block a person deciding an appeal.
"""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "APPEAL_FIGURES": (
        "Appeals per queue: received, pending, late, decided, reversed, median time, returned."
    ),
}

# Per queue, every appeal ever received, with its task and outcome (one each: the appeal's
# task is unique, an outcome's key is its task): how many wait (the task is open), how many of
# those are past their deadline by the database clock, how many were decided (upheld or
# reversed; a closed appeal decided nothing), how many were reversed, and the median time
# from receipt to outcome in seconds over the decided ones. The outcome notices that are
# dead are counted too: an operator must look at them; and the reversals whose overturn its
# checker returned (four eyes): the decision appealed still stands, the outcome is not final
# and its notice is held. Those are counted among the reversed (the outcome recorded), and
# need an operator too: the appeals lane cannot decide such an appeal again.
APPEAL_FIGURES = """
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
 ORDER BY q.slug
"""
