"""Every signed-in request's reads: the session, its user, and their staff power."""

from __future__ import annotations

# What each statement does, in one line: db/statements.sql heads each statement with it.
PURPOSE = {
    "SESSION_WITH_USER": (
        "A live session and the user it names, with whether they hold a staff power."
    ),
    "USER_ROW": "One user's row, with whether they hold a staff power.",
    "USER_HOLDS_POWER": "Whether one user holds a staff power.",
}

# -- every signed-in request (queue_app/identity/sessions.py and backends.py) ---------------------
# Whether the user u holds a staff power: staff, superuser, or any Django permission, granted
# directly or through a group. Every permission here grants an administrative act (overturn,
# retrying effect jobs, configuration, access, exports); a reviewer's access is membership of a
# queue's reviewer groups, never a permission, so "any permission" needs no list to keep current.
_HOLDS_POWER = """(
       u.is_staff OR u.is_superuser
       OR EXISTS (SELECT 1 FROM auth_user_user_permissions AS up WHERE up.user_id = u.id)
       OR EXISTS (SELECT 1 FROM auth_user_groups AS ug
                    JOIN auth_group_permissions AS gp ON gp.group_id = ug.group_id
                   WHERE ug.user_id = u.id))"""

# The two reads Django makes before any view, the session and the user it names, in one: the
# same rows and conditions as Django's own (a session not yet expired by the web server's
# clock, the user by primary key), bound on the server and prepared after a few runs, so no
# request compiles an ORM query for them. {user_columns}: the user model's columns, each as
# "user__<column>"; no user row (none named, or deleted since) leaves them NULL. USER_ROW is
# the user alone, for a session whose row names no user or another one than its data.
#
# Each also says whether the user holds a staff power (_HOLDS_POWER), which the second-factor
# gate asks on every request (identity/mfa.holds_staff_power): read with the user, it costs no
# round trip of its own.
SESSION_WITH_USER = (
    """
SELECT s.session_key, s.session_data, s.expire_date, s.user_id, {user_columns},
       """
    + _HOLDS_POWER
    + """ AS user__holds_power
  FROM queue_app_session AS s
  LEFT JOIN auth_user AS u ON u.id = s.user_id
 WHERE s.session_key = %(session_key)s AND s.expire_date > %(now)s
"""
)

USER_ROW = (
    "SELECT u.*, " + _HOLDS_POWER + " AS holds_power FROM auth_user AS u WHERE u.id = %(user_id)s"
)

# Whether one user holds a staff power, for a user object that was not read with its session.
USER_HOLDS_POWER = (
    "SELECT " + _HOLDS_POWER + " AS holds_power FROM auth_user AS u WHERE u.id = %(user_id)s"
)
