"""The decide: the fenced close and the insert of a decision with its outbox row."""

from __future__ import annotations

from queue_app.db.statements.access import _MAY_REVIEW

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "CLOSE_ITEM": "The fenced close alone, for the benchmark's step-by-step replay of a decide.",
    "INSERT_DECISION": "Record an overturn with its outbox row, event and lane task.",
    "CLOSE_AND_RECORD_DECISION": (
        "The whole decide in one statement: every rule of the fence, the close and the record."
    ),
    "EXPLAIN_REFUSED_DECISION": "Read, after a refused decide, which of its conditions failed.",
}

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
# statement, whatever the writer sends), as is the four-eyes check of an
# overturn. %(suggestion_view)s and %(suggestion_shown_at)s: what the maker saw of the item's
# machine suggestion (services.suggestions); the decision_suggestion trigger clears both for an
# item without one and fills suggestion_followed from the item row. The apply workers' wake-up
# follows the COMMIT (WAKE_APPLY_WORKERS).
# {source} is a CTE named src with one row, or none, of: item_id, queue_id, needs_check,
# qa_sampled, due_at (the deadline a check carries, NULL otherwise). No row: nothing is written.
# {returning}: more of src's columns to return.
_RECORD_DECISION = """
WITH {source}, decision AS (
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
