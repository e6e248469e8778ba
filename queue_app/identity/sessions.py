"""Django's database sessions, read with a prepared statement instead of an ORM query.

Every signed-in request loads its session before anything else happens. Django's store reads
it through the ORM, which compiles the same query afresh each time: a measurable share of a
console page's client CPU (bench/NOTES.md, B8). This store reads the same row, on the same
conditions, through sql.SESSION_ROW; everything else (saving, rotating, expiry, clearing) is
Django's own. The table, the cookie and the stored data are unchanged, so sessions carry over
in both directions when SESSION_ENGINE is switched.
"""

from __future__ import annotations

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.utils import timezone

from queue_app import sql
from queue_app.managers import fetch_prepared_instances


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self) -> Session | None:
        rows = fetch_prepared_instances(
            self.model, sql.SESSION_ROW, {"session_key": self.session_key, "now": timezone.now()}
        )
        if not rows:
            # As Django's store does: a missing or expired session starts a new one.
            self._session_key = None
            return None
        return rows[0]
