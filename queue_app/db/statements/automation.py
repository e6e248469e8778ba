"""Automatic decisions: the machine's suggestion taken as the decision at intake."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "AUTO_DECIDE": "Take a new item's suggestion as its queue's automatic decision, at intake.",
}

# Take a new item's suggestion as the decision of its queue's automation user, in the intake's
# transaction (services.automation.decide_automatically). One statement, the shape of
# decisions_sql._RECORD_DECISION: the item closed, the decision, its effect job (unless a check
# holds it), the 'auto_decided' event and the lane task (the check that machine_only and other
# policies ask for, queue_app_check_needed(..., true); else the blind QA review when drawn).
# The WHERE leaves the item alone, writing nothing, when the queue or the global switch is
# stopped, the queue has no threshold (or no active automation user), the confidence is below
# it (or not a plain decimal), or the suggestion is an escalation: an escalation hands the item
# to people by definition, and blind QA cannot reproduce one (second_person.QA_VERDICTS).
# That read is of the snapshot and takes no lock: the decision_suggestion trigger reads both
# switches again FOR SHARE and refuses (check_violation) an automatic decision a stop committed
# since, so a stop's UPDATE waits for this transaction and none follows it.
# The reason is the suggestion's code among the queue's active codes for its verdict; none
# gives NULL, which the column refuses (NOT NULL): the service's savepoint rolls back and the
# item waits for people. The QA draw (second_person.automatic_qa_draw) is compared as in
# CLOSE_AND_RECORD_DECISION, at the queue's rate for automatic decisions.
AUTO_DECIDE = """
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
       AND CASE WHEN i.suggestion ->> 'confidence' ~ '^[0-9]+(\\.[0-9]+)?$'
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
  FROM decision, src
"""
