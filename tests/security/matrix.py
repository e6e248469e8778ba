"""Run one request as one persona and describe the answer: status, where a redirect goes, writes.

The description is what the expectation table in test_authorization_matrix.py is written in:
"200", "403", "302>login" (sent to a login page), "302" (redirected elsewhere), and a "+write"
suffix when the request changed queue state (a claim, a decision, a renewed or released lease,
a new item, a retried job). Each request runs in a savepoint rolled back afterwards, so every
persona meets the same world.
"""

from __future__ import annotations

from django.db import connection, transaction

from tests.security.conftest import World
from tests.security.routes import Probe, Route, probe_for

# One row that changes whenever queue state does: items (state, lease), decisions, effect jobs.
FINGERPRINT = """
SELECT (SELECT count(*) FROM queue_app_decision),
       (SELECT md5(coalesce(string_agg(concat_ws('|', id, state, lease_token, lease_expires,
                                                 evidence_updated_at, attachments),
                                       ',' ORDER BY id), ''))
          FROM queue_app_reviewitem),
       (SELECT count(*) FROM queue_app_itemevent),
       (SELECT count(*) FROM queue_app_effectjob WHERE dead),
       -- second-person lanes: leases and states of lane tasks, and their outcomes
       (SELECT md5(coalesce(string_agg(concat_ws('|', id, state, lease_token, lease_expires),
                                       ',' ORDER BY id), ''))
          FROM queue_app_lanetask),
       (SELECT count(*) FROM queue_app_laneoutcome)
"""


def _fingerprint() -> tuple[object, ...]:
    with connection.cursor() as cursor:
        cursor.execute(FINGERPRINT)
        return tuple(cursor.fetchone())


def answer(world: World, persona: str, route: Route) -> str:
    """Request the route as the persona and describe what came back."""
    probe: Probe = probe_for(route, world)
    client = world.client(persona)
    extra = {"content_type": probe.content_type} if probe.content_type else {}
    with transaction.atomic():
        before = _fingerprint()
        send = getattr(client, probe.method.lower())
        response = (
            send(probe.path, probe.data, **extra) if probe.data is not None else send(probe.path)
        )
        wrote = _fingerprint() != before
        transaction.set_rollback(True)
    described = str(response.status_code)
    if response.status_code in (301, 302):
        location = response["Location"]
        if location.startswith(("/accounts/login/", "/admin/login/")):
            described += ">login"
    return described + ("+write" if wrote else "")
