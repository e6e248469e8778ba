"""The tamper-evident log: verifying the chain, sealing batches, inclusion proofs."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "VERIFY_CHAIN": (
        "The first link of the per-decision chain whose stored hash or sequence is wrong."
    ),
    "COUNT_DECISIONS": "How many decisions the log holds.",
    "COUNT_OUTCOMES": "How many second-person outcomes the log holds.",
    "CHAIN_HEADS": "The heads of both chains and the database clock, for a signed checkpoint.",
    "CHAIN_LINK_AT": (
        "The per-decision chain's link at one position, to compare with a checkpoint."
    ),
    "BATCH_AT": "The sealed batch at one position, to compare with a checkpoint.",
    "TRY_SEAL_LOCK": (
        "Take the sealer's lock if free: one sealer at a time, the others skip a round."
    ),
    "SEAL_LOCK": "Wait for the sealer's lock, for what needs everything committed sealed first.",
    "TAKE_UNSEALED": (
        "Take a round of unsealed decisions, outcomes and statements off the lists, with leaves."
    ),
    "SEAL_PREDECESSOR": "The batch (or old chain head) a new seal chains to.",
    "INSERT_BATCH": "Record a sealed batch and its entries in one statement.",
    "SEALED_LEAVES": (
        "Every sealed batch with its leaves as sealed and as recomputed, for verification."
    ),
    "OLD_CHAIN_HEAD_HASH": (
        "The last link of the per-decision chain, which the first sealed batch chains to."
    ),
    "INCLUSION_PROOF": "A sealed entry's batch and that batch's leaves, for an inclusion proof.",
    "UNACCOUNTED_DECISIONS": (
        "Decisions and outcomes neither sealed nor waiting, and waiting rows now gone."
    ),
}

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
# Decisions commit without a chain lock; the sealer places them afterwards.

# One sealer at a time, anywhere: the others skip this round instead of waiting (the lock is
# the transaction's; a sealer that dies releases it with its connection).
TRY_SEAL_LOCK = "SELECT pg_try_advisory_xact_lock(%(key)s)"

# What wants everything committed sealed before it goes on (a checkpoint) waits its turn
# instead: skipping would leave out whatever the running sealer has not committed yet.
SEAL_LOCK = "SELECT pg_advisory_xact_lock(%(key)s)"

# Take up to %(limit)s committed, unsealed entries (oldest first) off the sealer's lists and
# return each with its Merkle leaf: decisions first, then second-person outcomes, then statements
# of reasons, each in what room the parts before leave. Up to %(outcome_share)s of the room is
# kept for the outcomes waiting and as much for the statements waiting, so that a stream of
# decisions filling every round cannot hold either back indefinitely. One statement, one round
# trip a round, so an idle sealer reads both lists at the cost of one. An entry whose transaction
# has not committed yet is not visible here and waits for the next round: nothing is sealed before
# it is final. Every part sees the same snapshot; each LIMIT reads what the parts before it took.
# An entry whose row is gone from the log (deleted by an owner with the foreign keys off) comes
# back with a NULL leaf, not dropped: the sealer refuses the round and the list keeps it.
TAKE_UNSEALED = """
WITH kept AS MATERIALIZED (
    SELECT count(*) AS n
      FROM (SELECT 1 FROM queue_app_unsealedlaneoutcome LIMIT %(outcome_share)s) AS waiting
), kept_statements AS MATERIALIZED (
    SELECT count(*) AS n
      FROM (SELECT 1 FROM queue_app_unsealedstatement LIMIT %(outcome_share)s) AS waiting
), decisions AS (
    DELETE FROM queue_app_unsealeddecision
     WHERE decision_id IN (SELECT decision_id FROM queue_app_unsealeddecision
                            ORDER BY decision_id
                            LIMIT %(limit)s - (SELECT n FROM kept)
                                  - (SELECT n FROM kept_statements))
 RETURNING decision_id
), outcomes AS (
    DELETE FROM queue_app_unsealedlaneoutcome
     WHERE outcome_id IN (SELECT outcome_id FROM queue_app_unsealedlaneoutcome
                           ORDER BY outcome_id
                           LIMIT %(limit)s - (SELECT count(*) FROM decisions)
                                 - (SELECT n FROM kept_statements))
 RETURNING outcome_id
), statements AS (
    DELETE FROM queue_app_unsealedstatement
     WHERE statement_id IN (SELECT statement_id FROM queue_app_unsealedstatement
                             ORDER BY statement_id
                             LIMIT %(limit)s - (SELECT count(*) FROM decisions)
                                   - (SELECT count(*) FROM outcomes))
 RETURNING statement_id
)
SELECT 0 AS part, 'decision' AS kind, decisions.decision_id AS id,
       CASE WHEN d.id IS NOT NULL THEN queue_app_decision_leaf(d) END AS leaf
  FROM decisions LEFT JOIN queue_app_decision AS d ON d.id = decisions.decision_id
UNION ALL
SELECT 1, 'outcome', outcomes.outcome_id,
       CASE WHEN o.task_id IS NOT NULL THEN queue_app_laneoutcome_leaf(o) END
  FROM outcomes LEFT JOIN queue_app_laneoutcome AS o ON o.task_id = outcomes.outcome_id
UNION ALL
SELECT 2, 'statement', statements.statement_id,
       CASE WHEN s.id IS NOT NULL THEN queue_app_statement_leaf(s) END
  FROM statements
  LEFT JOIN queue_app_statementofreasons AS s ON s.id = statements.statement_id
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
# position, then one per second-person outcome, its positions following the decisions', then
# one per statement of reasons, after both.
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
), statements AS (
    INSERT INTO queue_app_statemententry (statement_id, batch_id, position, leaf)
    SELECT statement_id, (SELECT seq FROM batch),
           cardinality(%(decision_ids)s::bigint[]) + cardinality(%(outcome_ids)s::bigint[])
             + position - 1, leaf
      FROM unnest(%(statement_ids)s::bigint[], %(statement_leaves)s::text[])
           WITH ORDINALITY AS e (statement_id, leaf, position)
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
        UNION ALL
        SELECT se.batch_id, se.position, 'statement', se.statement_id,
               se.leaf, queue_app_statement_leaf(s)
          FROM queue_app_statemententry AS se
          LEFT JOIN queue_app_statementofreasons AS s ON s.id = se.statement_id
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
# second-person outcome (%(outcome_id)s, its lane task) or a statement of reasons
# (%(statement_id)s); the other parameters are NULL.
INCLUSION_PROOF = """
WITH target AS (
    SELECT batch_id, position FROM queue_app_chainentry WHERE decision_id = %(decision_id)s
    UNION ALL
    SELECT batch_id, position FROM queue_app_laneoutcomeentry WHERE outcome_id = %(outcome_id)s
    UNION ALL
    SELECT batch_id, position FROM queue_app_statemententry
     WHERE statement_id = %(statement_id)s
)
SELECT t.batch_id AS seq, t.position, b.size, b.merkle_root, b.batch_hash,
       (SELECT array_agg(all_entries.leaf ORDER BY all_entries.position)
          FROM (SELECT e2.leaf, e2.position FROM queue_app_chainentry AS e2
                 WHERE e2.batch_id = t.batch_id
                UNION ALL
                SELECT o2.leaf, o2.position FROM queue_app_laneoutcomeentry AS o2
                 WHERE o2.batch_id = t.batch_id
                UNION ALL
                SELECT s2.leaf, s2.position FROM queue_app_statemententry AS s2
                 WHERE s2.batch_id = t.batch_id) AS all_entries) AS leaves
  FROM target AS t JOIN queue_app_chainbatch AS b ON b.seq = t.batch_id
"""

# Decisions neither in the old chain, nor sealed, nor waiting to be, and second-person outcomes
# and statements of reasons neither sealed nor waiting: someone removed the row that queued them.
# Entries waiting on the sealer's lists whose decision or outcome is gone: someone removed the row
# itself. Also the oldest decision still waiting, to tell a stopped sealer from a busy one.
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
  (SELECT min(s.id) FROM queue_app_statementofreasons AS s
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_statemententry AS e WHERE e.statement_id = s.id)
      AND NOT EXISTS (SELECT 1 FROM queue_app_unsealedstatement AS u
                       WHERE u.statement_id = s.id)
  ) AS first_unaccounted_statement,
  (SELECT min(u.decision_id) FROM queue_app_unsealeddecision AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_decision AS d WHERE d.id = u.decision_id)
  ) AS first_vanished,
  (SELECT min(u.outcome_id) FROM queue_app_unsealedlaneoutcome AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_laneoutcome AS o WHERE o.task_id = u.outcome_id)
  ) AS first_vanished_outcome,
  (SELECT min(u.statement_id) FROM queue_app_unsealedstatement AS u
    WHERE NOT EXISTS (SELECT 1 FROM queue_app_statementofreasons AS s
                       WHERE s.id = u.statement_id)
  ) AS first_vanished_statement,
  (SELECT count(*) FROM queue_app_unsealeddecision) AS waiting,
  (SELECT min(d.created_at) FROM queue_app_unsealeddecision AS u
     JOIN queue_app_decision AS d ON d.id = u.decision_id) AS oldest_waiting
"""
