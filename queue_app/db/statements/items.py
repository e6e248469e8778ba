"""The console's item page: the item, its queue and access, and what the page shows."""

from __future__ import annotations

from queue_app.db.statements.access import _MAY_READ, _MAY_REVIEW

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "SUBJECT_HISTORY": (
        "The subject's other items the viewer may read, each with its standing decision."
    ),
    "ITEM_WITH_QUEUE_AND_ACCESS": (
        "An item, its queue, and whether the user may review that queue."
    ),
    "QUEUE_BY_SLUG_WITH_ACCESS": "A queue by its slug, and whether the user may review it.",
    "QUEUE_OF_ITEM_WITH_ACCESS": "The queue an item is in, and whether the user may review it.",
    "ITEM_DECISIONS": (
        "An item's decisions oldest first, each with its status and its reviewer's name."
    ),
    "PAGE_ITEM_RETURNS": "The checkers' returns of an item's decisions, with their notes.",
    "PAGE_ITEM_LEASE_HOLDER": "The name of whoever holds an item's lease.",
    "PAGE_ITEM_REASON_CODES": (
        "The reason codes an item's page names: its queue's and its decisions'."
    ),
    "PAGE_ITEM_EVIDENCE_RULES": "The evidence rules of an item's queue, in the page's order.",
    "PAGE_ITEM_HOLD_REASONS": "The hold reasons a holder of an item may choose now, by label.",
}

# The other items of one subject, newest first, in queues the viewer may read (the access
# rule, _MAY_READ, per row), each with the decision that stands (queue_app_itemstory: never a
# returned decision, one awaiting its check, or one an overturn replaced) and that decision's
# reason and author. One statement on item_subject_key; the LIMIT bounds both the rows and the
# access checks' work to the subject's own items. %(exclude_id)s is the item being shown (0:
# none).
SUBJECT_HISTORY = (
    """
SELECT i.id, i.state, i.subject, i.created_at, i.decided_at, i.due_at, i.queue_id,
       q.slug AS queue_slug, q.name AS queue_name,
       st.standing_outcome AS verdict, r.code AS reason_code, r.label AS reason_label,
       coalesce(d.reviewer_username, u.username) AS reviewer, d.created_at AS decided_on
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
  JOIN queue_app_itemstory AS st ON st.item_id = i.id
  LEFT JOIN queue_app_decision AS d ON d.id = st.standing_decision_id
  LEFT JOIN queue_app_reasoncode AS r ON r.id = d.reason_code_id
  LEFT JOIN auth_user AS u ON u.id = d.reviewer_id
 WHERE i.subject_key = %(subject_key)s AND i.id <> %(exclude_id)s
   AND """
    + _MAY_READ.format(queue="i.queue_id")
    + """
 ORDER BY i.created_at DESC
 LIMIT %(limit)s
"""
)

# -- the console's item page (console/views.py) ---------------------------------------------------
# The item page and every form posted from it but the decide first find the item, its queue and
# whether the user may review that queue (the one access rule, _MAY_REVIEW, as a column of the
# row): one statement, by primary key. It replaces an ORM query whose compilation cost more
# client CPU than the page's own work (B8, docs/performance.md), and then a pipeline of two. Like
# the API's by-id routes (docs/scaling.md) it reads by id, not by queue: on a schema
# distributed by queue_id it is an indexed lookup on every shard, and the writes that follow
# name the queue it returns. {queue_columns} is the queue's every column as
# "queue__<column>": managers.ReviewItemManager.with_queue_and_access writes it from the model,
# so a column added to the queue is read here too.
ITEM_WITH_QUEUE_AND_ACCESS = (
    """
SELECT i.*, {queue_columns}, """
    + _MAY_REVIEW.format(queue="i.queue_id")
    + """ AS may_review
  FROM queue_app_reviewitem AS i
  JOIN queue_app_queue AS q ON q.id = i.queue_id
 WHERE i.id = %(item_id)s
"""
)

# The console's Next item: the queue by its slug and whether the user may review it (what the
# claim asks again in its own statement), in one prepared statement; no row for no such queue.
QUEUE_BY_SLUG_WITH_ACCESS = (
    """
SELECT q.*, """
    + _MAY_REVIEW.format(queue="q.id")
    + """ AS may_review
  FROM queue_app_queue AS q
 WHERE q.slug = %(slug)s
"""
)

# The console's decide: the queue an item is in and whether the user may review it, without the
# item's row (the decide statement reads that itself, fenced); no row for no such item.
QUEUE_OF_ITEM_WITH_ACCESS = (
    """
SELECT q.*, """
    + _MAY_REVIEW.format(queue="q.id")
    + """ AS may_review
  FROM queue_app_queue AS q
 WHERE q.id = (SELECT queue_id FROM queue_app_reviewitem WHERE id = %(item_id)s)
"""
)

# The rest of what an item's page shows, sent with the item's own read in one round trip
# (services/item_page.py), before its queue is known to Python: each statement finds the
# queue (and the lease holder) through the item. What they return for an item the user may not
# see is dropped unread, with the item (the 404 is decided from the item's row).
_QUEUE_OF_PAGE_ITEM = (
    "(SELECT pi.queue_id FROM queue_app_reviewitem AS pi WHERE pi.id = %(item_id)s)"
)

# Decisions oldest first, as the history table lists them, each with the name of who recorded
# it when it predates reviewer_username: later decisions carry the name as it
# was when they were made, and need no join. The name only (reviewer__*), never the rest of
# the user's row (the password hash, above all). Each with its status from the item's one story
# (queue_app_decisionstatus), so a returned decision is never shown as if it stood.
ITEM_DECISIONS = """
SELECT d.*, s.status AS story_status,
       u.id AS reviewer__id, u.username AS reviewer__username,
       u.first_name AS reviewer__first_name, u.last_name AS reviewer__last_name
  FROM queue_app_decision AS d
  JOIN queue_app_decisionstatus AS s ON s.decision_id = d.id
  LEFT JOIN auth_user AS u ON u.id = d.reviewer_id AND d.reviewer_username IS NULL
 WHERE d.item_id = %(item_id)s
 ORDER BY d.id
"""

# The checkers' returns of the item's decisions, with the note the maker (whoever decides the
# item again) must read: the page shows each under the decision it returned. By the task's
# item index; an item has a check per decision at most.
PAGE_ITEM_RETURNS = """
SELECT t.decision_id, o.actor_username, o.note, o.created_at
  FROM queue_app_lanetask AS t
  JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
 WHERE t.item_id = %(item_id)s AND t.kind = 'check' AND o.result = 'returned'
 ORDER BY t.decision_id
"""

# The lease holder's name, whoever holds the item: the page shows it only to someone else than
# the holder. Their name only: the page has no use for the rest of their row (the password
# hash, above all).
PAGE_ITEM_LEASE_HOLDER = """
SELECT u.id, u.username, u.first_name, u.last_name
  FROM auth_user AS u
 WHERE u.id = (SELECT pi.lease_owner_id FROM queue_app_reviewitem AS pi
                WHERE pi.id = %(item_id)s AND pi.state = 'leased')
"""

# The reason codes the page names: those of the item's queue (the decision form offers the
# active ones for the review verdicts, in this order) and those of its decisions, which a
# decision made before the item moved queues (escalation) may hold from another queue.
PAGE_ITEM_REASON_CODES = f"""
SELECT r.*
  FROM queue_app_reasoncode AS r
 WHERE r.queue_id = ANY (ARRAY(SELECT {_QUEUE_OF_PAGE_ITEM}::bigint
                               UNION SELECT d.queue_id FROM queue_app_decision AS d
                                      WHERE d.item_id = %(item_id)s))
 ORDER BY r.verdict, r.label
"""

# The queue's evidence rules, in the order the page lists the warnings they raise.
PAGE_ITEM_EVIDENCE_RULES = f"""
SELECT e.* FROM queue_app_evidencerule AS e WHERE e.queue_id = {_QUEUE_OF_PAGE_ITEM} ORDER BY e.id
"""

# The hold reasons a holder may choose now, by label (services.hold_reasons_for's order).
PAGE_ITEM_HOLD_REASONS = f"""
SELECT h.* FROM queue_app_holdreason AS h
 WHERE h.queue_id = {_QUEUE_OF_PAGE_ITEM} AND h.retired_at IS NULL
 ORDER BY h.label
"""
