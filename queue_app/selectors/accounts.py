"""Read who a request is: its session with the user it names, a user by id, a user's powers.

Each read is one prepared statement (db/statements/identity.py): they run on every signed-in
request, where compiling the ORM's query cost more than running it (B8, docs/performance.md).
The rows and instances are the same as the ORM's.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from django.db import models

from queue_app.db.runner import (
    build_instances,
    fetch_prepared_instances,
    prefixed_columns,
    prepared_result,
    split_result,
)
from queue_app.db.statements import identity as identity_sql

_USER_PREFIX = "user__"


@cache
def _session_with_user_statement(user_model: type[models.Model]) -> str:
    """identity_sql.SESSION_WITH_USER with the user's columns, as the model has them."""
    columns = prefixed_columns(user_model, alias="u", prefix=_USER_PREFIX)
    return identity_sql.SESSION_WITH_USER.format(user_columns=columns)


def session_with_user(
    session_model: type[models.Model],
    user_model: type[models.Model],
    *,
    session_key: str | None,
    now: datetime,
) -> tuple[Any, Any]:
    """Return the live session with that key (or None) and the user its row names (or None:
    no user named, or the user deleted since), in one statement."""
    result = prepared_result(
        _session_with_user_statement(user_model), {"session_key": session_key, "now": now}
    )
    own, user_columns = split_result(result, prefix=_USER_PREFIX)
    sessions = build_instances(session_model, own)
    if not sessions:
        return None, None
    users = build_instances(user_model, user_columns)
    return sessions[0], (users[0] if users and users[0].pk is not None else None)


def user_by_id(user_model: type[models.Model], user_id: Any) -> Any:
    """Return the user with that id, or None (identity_sql.USER_ROW)."""
    users = fetch_prepared_instances(user_model, identity_sql.USER_ROW, {"user_id": user_id})
    return users[0] if users else None


def user_holds_power(user_id: Any) -> bool:
    """Return whether the user holds a staff power (identity_sql.USER_HOLDS_POWER)."""
    rows = prepared_result(identity_sql.USER_HOLDS_POWER, {"user_id": user_id})[1]
    return bool(rows and rows[0][0])
