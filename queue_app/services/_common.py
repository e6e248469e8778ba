"""What every service module shares: timeouts, log fields, token parsing, the clock."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import models as auth_models
from django.db import connection

from queue_app.db.runner import set_local_timeouts
from queue_app.errors import StaleLease

logger = logging.getLogger("queue_app")

NOTE_MAX_LENGTH = 10_000

#: Who a service acts for: request.user as Django sets it (the user model, or anonymous).
User = auth_models.User | auth_models.AnonymousUser


def signed_in_id(user: User) -> int:
    """Return the id of a user the caller has signed in."""
    # Only AnonymousUser has no pk, and the pages and the API reach a service that writes
    # only once someone has signed in.
    return cast(int, user.pk)


def guard_timeouts() -> None:
    set_local_timeouts(
        lock_timeout_ms=settings.REVIEW_LOCK_TIMEOUT_MS,
        statement_timeout_ms=settings.REVIEW_STATEMENT_TIMEOUT_MS,
    )


def log_extra(**fields: Any) -> dict[str, Any]:
    return {
        key: (str(value) if isinstance(value, uuid.UUID) else value)
        for key, value in fields.items()
    }


def parse_token(lease_token: uuid.UUID | str) -> uuid.UUID:
    if isinstance(lease_token, uuid.UUID):
        return lease_token
    try:
        return uuid.UUID(str(lease_token))
    except ValueError:
        # A forged or mangled token can never match a lease: same answer as a stale one.
        raise StaleLease() from None


def database_now() -> datetime:
    """Return the database clock (leases are judged by it, not by this process's clock)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]
