"""Putting an item on hold and bringing it back; the deadline pauses while it is held."""

from __future__ import annotations

from queue_app.db.statements.access import _MAY_REVIEW

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "HOLD_ITEM": "Put a leased item on hold, fenced by its token, pushing its deadline back.",
    "RESUME_HELD_ITEM": (
        "Bring a held item back to the queue now, giving back the unused hold time."
    ),
}

# -- deadlines, holds and the subject's history ------------------------------------------------
# The deadline rule: the clock pauses while an item is held. HOLD_ITEM pushes due_at back by the
# whole hold (hold_until - now) when the hold starts, so a held item's due_at is already the
# deadline it will have when it comes back, and the claim that takes it back touches nothing.
# A hold ended early (RESUME_HELD_ITEM, on evidence replacement) gives the unused part back.
# Either way due_at moves by exactly the time the item spent on hold.

# Put a leased item on hold, fenced by its token like every write of a holder: zero rows means
# the lease is no longer the caller's (StaleLease), the resume time is outside
# (now, now + the queue's max_hold], or the caller may no longer review the queue (access
# revoked while the lease was open; checked here, not only before, as the decide path does)
# (the service checks the last two first, to say which). The reason
# is looked up among the queue's active hold codes; a code outside that set gives NULL, which
# item_hold_columns_match_state refuses, so nothing is written (InvalidHoldReason). The lease
# that ends in a hold is not counted towards abandonment (lease_count goes back down by one).
# The held event records the deadline before and after, for the timeline, and the lease token
# that fenced the hold, so that a retry of this same hold is recognised (find_completed_hold).
HOLD_ITEM = (
    """
WITH held AS (
    UPDATE queue_app_reviewitem AS i
       SET state = 'held',
           lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL,
           hold_until = %(hold_until)s, held_at = now(),
           hold_reason_id = (SELECT r.id FROM queue_app_holdreason AS r
                              WHERE r.queue_id = i.queue_id AND r.code = %(reason_code)s
                                AND r.retired_at IS NULL),
           due_at = i.due_at + (%(hold_until)s::timestamptz - now()),
           lease_count = greatest(i.lease_count - 1, 0)
      FROM queue_app_queue AS q
     WHERE i.id = %(item_id)s AND i.state = 'leased'
       AND i.lease_token = %(lease_token)s AND i.lease_owner_id = %(owner_id)s
       AND q.id = i.queue_id
       AND %(hold_until)s::timestamptz > now()
       AND %(hold_until)s::timestamptz - now() <= q.max_hold
       AND """
    + _MAY_REVIEW.format(queue="i.queue_id")
    + """
 RETURNING i.id, i.hold_until, i.held_at, i.due_at, i.hold_reason_id
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'held', %(owner_id)s, now(),
           jsonb_build_object('reason_code', %(reason_code)s::text, 'hold_until', hold_until,
                              'due_at_before', due_at - (hold_until - held_at),
                              'due_at', due_at, 'lease_token', %(lease_token)s::text)
      FROM held
)
SELECT * FROM held
"""
)

# Bring a held item back to the queue now (its evidence was replaced: what it waited for has
# arrived), giving back the part of the hold not used. A hold already past its time (due, not
# yet claimed) used all of it: due_at stays. The caller holds the row lock (replace_evidence's
# SELECT FOR UPDATE), so "old" is the row as it is; zero rows means it was not held.
RESUME_HELD_ITEM = """
WITH resumed AS (
    UPDATE queue_app_reviewitem AS i
       SET state = 'pending',
           due_at = i.due_at - greatest(i.hold_until - now(), interval '0'),
           hold_until = NULL, held_at = NULL, hold_reason_id = NULL
      FROM queue_app_reviewitem AS old
     WHERE i.id = %(item_id)s AND i.state = 'held' AND old.id = i.id
 RETURNING i.id, i.due_at, old.due_at AS due_at_before, old.hold_until, old.held_at
), events AS (
    INSERT INTO queue_app_itemevent (item_id, kind, actor_id, at, detail)
    SELECT id, 'resumed', %(actor_id)s, now(),
           jsonb_build_object('cause', %(cause)s::text, 'hold_until', hold_until,
                              'due_at_before', due_at_before, 'due_at', due_at)
      FROM resumed
)
SELECT * FROM resumed
"""
