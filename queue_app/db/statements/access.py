"""Who may do what: queue access, evidence intake, held permissions, and session timeouts."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "SET_LOCAL_TIMEOUTS": "Bound lock waits and statement time for the rest of the transaction.",
    "MAY_REVIEW_QUEUE": (
        "Whether a user may review a queue (claim, renew, hold and decide its items)."
    ),
    "MAY_SEND_EVIDENCE": (
        "Whether a user may send evidence (items, payloads, attachments) to a queue."
    ),
    "HOLD_PERMISSION": (
        "Whether a user holds a Django permission, its granting rows locked FOR SHARE."
    ),
    "SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE": (
        "Timeouts, a reviewer's claim lock in a queue, and whether they may review it."
    ),
    "SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS": (
        "Timeouts for a fenced write, and whether the user may still review the queue."
    ),
}

# Session guards for a claim or fenced write: a lock held elsewhere on the table (a migration,
# a stuck transaction) becomes a quick, clean error rather than a hung reviewer request.
SET_LOCAL_TIMEOUTS = """
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true)
"""

# Whether a user may review a queue: an active user who is a superuser, or reviews it through a
# group the queue names, or is the service user of an unrevoked API client granted the queue
# with the scope the work needs.
# Whether the user is active and a superuser is read from auth_user here, not passed in: the
# user object a request holds says what was true when the request began, and deactivating
# someone (offboarding) must stop their next write. The same goes for an API client's scope
# and revocation, which the API checked against the client it loaded at the request's start.
# The auth_user probes are uncorrelated (run once per statement, even where the fragment is a
# column of many rows), the rest two index lookups (the unique (user, group) and (queue,
# group) keys, and the client grant); a fragment, so the hot paths below carry it in a
# statement they run anyway instead of paying a round trip for it.
_IS_ACTIVE = "EXISTS (SELECT 1 FROM auth_user AS au WHERE au.id = %(owner_id)s AND au.is_active)"


def _client_grant(scope: str) -> str:
    """An unrevoked API client whose service user is %(owner_id)s, granted {queue}, with scope."""
    return (
        "EXISTS (SELECT 1 FROM queue_app_apiclient_queues AS cq\n"
        "                 JOIN queue_app_apiclient AS c ON c.id = cq.apiclient_id\n"
        "                WHERE cq.queue_id = {queue} AND c.user_id = %(owner_id)s\n"
        f"                  AND c.revoked_at IS NULL AND {scope})"
    )


def _queue_access(client_scope: str) -> str:
    return f"""(
    {_IS_ACTIVE}
  AND (
    EXISTS (SELECT 1 FROM auth_user AS su WHERE su.id = %(owner_id)s AND su.is_superuser)
    OR EXISTS (SELECT 1 FROM queue_app_queue_reviewer_groups AS qg
                 JOIN auth_user_groups AS ug ON ug.group_id = qg.group_id
                WHERE qg.queue_id = {{queue}} AND ug.user_id = %(owner_id)s)
    OR {_client_grant(client_scope)}
  )
)"""


# May claim, renew, hold and decide items of {queue}: a client needs the adjudicate scope.
_MAY_REVIEW = _queue_access("c.can_adjudicate")

# May read items of {queue} (a subject's history): any unrevoked client granted the queue,
# whichever scope it holds (the API lets intake clients read what they sent).
_MAY_READ = _queue_access("true")

MAY_REVIEW_QUEUE = "SELECT " + _MAY_REVIEW.format(queue="%(queue_id)s") + " AS allowed"

# Whether a user may send evidence (create an item, replace its payload, attach a file) to a
# queue: anyone who is not an API client's service user (the console and commands check their
# own rules), or the active service user of an unrevoked client with the intake scope granted
# the queue. The API checked the same against the client it loaded when the request began;
# the intake services ask again inside the transaction that writes, after the item's row lock
# (so in the queue the item is in now), so a client revoked or stripped of intake since then
# writes nothing.
MAY_SEND_EVIDENCE = (
    "SELECT NOT EXISTS (SELECT 1 FROM queue_app_apiclient AS c WHERE c.user_id = %(owner_id)s)\n"
    f"    OR ({_IS_ACTIVE}\n"
    "        AND " + _client_grant("c.can_intake").format(queue="%(queue_id)s") + ") AS allowed"
)

# Whether %(user_id)s holds the permission %(app_label)s.%(codename)s, decided as Django's
# ModelBackend decides it (an active user who is a superuser or holds it directly or through a
# group), and held: the rows that grant it are locked FOR SHARE until the transaction ends.
# For the rare writes of administrators (an admin save, a second-factor reset, a dead job's
# retry), whose has_perm answers are cached for the whole request. Read here, a revocation
# committed since the request began is seen; locked here, one committed later waits for this
# write to commit, so no revocation lands between the check and the write. Django's own
# revoking writes (the user form's save, user_permissions.remove, a group's deletion) update
# or delete exactly these rows: the user's row (is_active, is_superuser), the direct grant,
# and the membership and group grant. Only one granting path is locked (LIMIT 1): while it
# stands the permission is held, whatever happens to the others.
# Each CTE is MATERIALIZED so that its locking clause applies to its own rows, read once.
HOLD_PERMISSION = """
WITH actor AS MATERIALIZED (
    SELECT u.id, u.is_superuser FROM auth_user AS u
     WHERE u.id = %(user_id)s AND u.is_active
       FOR SHARE
), wanted AS MATERIALIZED (
    SELECT p.id FROM auth_permission AS p
      JOIN django_content_type AS ct ON ct.id = p.content_type_id
     WHERE ct.app_label = %(app_label)s AND p.codename = %(codename)s
), direct AS MATERIALIZED (
    SELECT up.id FROM auth_user_user_permissions AS up
     WHERE up.user_id IN (SELECT id FROM actor) AND up.permission_id IN (SELECT id FROM wanted)
     LIMIT 1
       FOR SHARE
), via_group AS MATERIALIZED (
    SELECT gp.id FROM auth_user_groups AS ug
      JOIN auth_group_permissions AS gp ON gp.group_id = ug.group_id
     WHERE ug.user_id IN (SELECT id FROM actor) AND gp.permission_id IN (SELECT id FROM wanted)
     LIMIT 1
       FOR SHARE OF ug, gp
)
SELECT coalesce((SELECT a.is_superuser FROM actor AS a), false)
    OR EXISTS (SELECT 1 FROM direct)
    OR EXISTS (SELECT 1 FROM via_group) AS held
"""

# The timeouts above, plus: serialise one reviewer's claims in one queue (two tabs pressing
# Next at once) so that they hold at most one live lease there, and report whether they may
# claim in it at all. The lock is transaction-scoped (released at commit) and keyed by
# (queue, reviewer), so other reviewers are not affected. One round trip.
SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE = (
    """
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true),
       pg_advisory_xact_lock(%(queue_id)s::int, %(owner_id)s::int),
       """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """ AS allowed
"""
)

# The timeouts above for a fenced write on one item, plus whether the user may still review
# the item's queue (access can be revoked while a lease is open). One round trip. The queue is
# the caller's (CLOSE_ITEM then closes the item only in that queue): no read of the item here,
# so on a distributed schema this touches reference tables only (docs/scaling.md).
SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS = (
    """
SELECT set_config('lock_timeout', %(lock_timeout)s, true),
       set_config('statement_timeout', %(statement_timeout)s, true),
       """
    + _MAY_REVIEW.format(queue="%(queue_id)s")
    + """ AS allowed
"""
)
