"""One item's timeline: everything that happened to it, from every table that records it."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "ITEM_TIMELINE": (
        "One page of an item's events, decisions and lane tasks, newest first, blind-aware."
    ),
    "ITEM_TOUCHED_BY": "The other people an item's events name, for its case header.",
}

# The item page's one timeline (selectors/item_timeline.py): its events, its decisions (with
# overturns and escalations, which are decisions), its second-person tasks opened and their
# outcomes, in one statement. Each branch reads by the item's id through an index that starts
# with it (itemevent_item_at, the item_id indexes of decisions and lane tasks; an outcome by its
# task's key) and keeps only the rows the page can reach (%(reach)s = offset + limit + 1), so a
# long history costs one page, not all of it. Left out: 'renewed' (the page's heartbeat writes
# one every few minutes: noise) and the events that the decision and outcome rows tell better
# ('decided', 'auto_decided', the lane outcomes).
# Rows of one transaction share their time: rank orders them as they are written (the claim's
# event, then the decision, the lane task it opens, and the task's outcome).
# Blind QA (services/blindness.py, whose rule _BLIND states again in SQL so the timeline can go
# with the item's read): when the viewer holds the item's open QA task, the decisions, the lane
# outcomes and the suggestion reveals (which name the maker's chosen verdict) are not read at
# all, and no row names a person: who claimed the item is who decided it.
_BLIND = """
WITH viewer AS (
    SELECT EXISTS (SELECT 1 FROM queue_app_lanetask AS qa
                    WHERE qa.item_id = %(item_id)s AND qa.kind = 'qa' AND qa.state = 'open'
                      AND qa.lease_owner_id = %(viewer_id)s) AS blind
)"""

ITEM_TIMELINE = (
    _BLIND
    + """
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
LIMIT %(limit)s OFFSET %(offset)s
"""
)

# The people an item's events name other than the viewer (claims, decisions, checks, holds,
# reveals: every write of a person leaves an event), for "who else has touched it" in the case
# header; nobody to a blind QA reviewer. By itemevent_item_at; bounded, the header names a few.
ITEM_TOUCHED_BY = (
    _BLIND
    + """
SELECT u.username, max(e.at) AS last_at
  FROM viewer, queue_app_itemevent AS e
  JOIN auth_user AS u ON u.id = e.actor_id
 WHERE e.item_id = %(item_id)s AND e.actor_id <> %(viewer_id)s AND NOT viewer.blind
 GROUP BY u.username
 ORDER BY last_at DESC
 LIMIT %(limit)s
"""
)
