"""Backfilling stored evidence hashes for open items (manage.py backfill_evidence_hashes)."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "UNHASHED_OPEN_ITEMS": "A batch of open items without a stored evidence hash, in id order.",
    "STORE_EVIDENCE_HASHES": (
        "Store evidence hashes where each row still holds exactly what was hashed."
    ),
}

# The states a decision can still be made in: the ones a stored hash can serve.
_OPEN = "('pending', 'leased', 'held')"

UNHASHED_OPEN_ITEMS = f"""
SELECT id, subject, payload::text AS payload, attachments::text AS attachments,
       suggestion::text AS suggestion
  FROM queue_app_reviewitem
 WHERE id > %(after)s AND evidence_hash IS NULL AND state IN {_OPEN}
 ORDER BY id
 LIMIT %(batch)s
"""

STORE_EVIDENCE_HASHES = f"""
UPDATE queue_app_reviewitem AS i
   SET evidence_hash = u.hash
  FROM unnest(%(ids)s::bigint[], %(hashes)s::text[], %(subjects)s::text[],
              %(payloads)s::text[], %(attachments)s::text[])
       AS u(id, hash, subject, payload, attachments)
 WHERE i.id = u.id
   AND i.evidence_hash IS NULL
   AND i.state IN {_OPEN}
   AND i.subject = u.subject
   AND i.payload::text = u.payload
   AND i.attachments::text = u.attachments
"""
