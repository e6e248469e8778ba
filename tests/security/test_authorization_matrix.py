"""Every route by every kind of caller → the answer it must get, generated from the URLconf.

The routes come from walking the resolver (routes.py), so a URL added anywhere is requested by
every persona and fails here until the table below says what each persona should get.
Notation (matrix.py): "200", "403", "302>login" (sent to a login page), "302" (elsewhere), and
"+write" when queue state changed. Admin routes are grouped by pattern; the first match wins.
"""

from __future__ import annotations

import fnmatch

import pytest

from tests.security.conftest import PERSONAS
from tests.security.matrix import answer
from tests.security.routes import Route, all_routes

pytestmark = pytest.mark.django_db

LOGIN = "302>login"


def row(
    anonymous: str,
    stranger: str,
    reviewer: str,
    viewer: str,
    admin: str,
    api_scoped: str | None = None,
    api_unscoped: str | None = None,
) -> dict[str, str]:
    """Expected answers per persona; outside the API a bearer token is no login at all."""
    return {
        "anonymous": anonymous,
        "stranger": stranger,
        "reviewer": reviewer,
        "viewer": viewer,
        "admin": admin,
        "api_scoped": anonymous if api_scoped is None else api_scoped,
        "api_unscoped": anonymous if api_unscoped is None else api_unscoped,
    }


# Staff only: everyone else (reviewers included) is sent to the admin login.
def staff(viewer: str, admin: str) -> dict[str, str]:
    return row(LOGIN, LOGIN, LOGIN, viewer, admin)


EXPECTED: list[tuple[str, dict[str, str]]] = [
    # -- Django admin -----------------------------------------------------------------------------
    ("admin:login", row("200", "200", "200", "302", "302")),
    # Logout is POST-only in Django 5; a GET is refused (405) or, logged out, sent back.
    ("admin:logout", row("302", "302", "302", "405", "405")),
    ("admin:index", staff("200", "200")),
    ("admin:app_list", staff("200", "200")),  # requested for queue_app
    ("admin:password_change*", staff("200", "200")),
    ("admin:jsi18n", staff("200", "200")),
    ("admin:autocomplete", staff("403", "403")),  # no field named: refused for everyone
    ("admin:view_on_site", staff("404", "404")),  # items have no public URL
    ("admin/(?P<url>.*)$", staff("404", "404")),  # the catch-all
    # Unnamed "<object_id>/" routes redirect to the change page (after the login check).
    ("admin/*/<path:object_id>/", staff("302", "302")),
    # Users, groups and the login-attempt log are the superuser's; the viewer has no auth perms.
    ("admin:auth_*", staff("403", "200")),
    ("admin:axes_*_add", staff("403", "403")),  # attempts are recorded, never typed in
    ("admin:axes_*", staff("403", "200")),
    # Records only the application writes: nobody adds, changes or deletes them here.
    ("admin:queue_app_reviewitem_add", staff("403", "403")),
    ("admin:queue_app_reviewitem_delete", staff("403", "403")),
    ("admin:queue_app_decision_add", staff("403", "403")),
    ("admin:queue_app_decision_delete", staff("403", "403")),
    ("admin:queue_app_applieddecision_add", staff("403", "403")),
    ("admin:queue_app_applieddecision_delete", staff("403", "403")),
    ("admin:queue_app_effectjob_add", staff("403", "403")),
    ("admin:queue_app_effectjob_delete", staff("403", "403")),
    ("admin:queue_app_chainverification_add", staff("403", "403")),
    ("admin:queue_app_chainverification_delete", staff("403", "403")),
    # Overturning needs can_overturn, which the viewer lacks.
    ("admin:queue_app_decision_overturn", staff("403", "200")),
    # The one stop-switch row is made by the migration and kept; statements are append-only,
    # and a queue's statement policy is switched off, never deleted.
    ("admin:queue_app_automationswitch_add", staff("403", "403")),
    ("admin:queue_app_automationswitch_delete", staff("403", "403")),
    ("admin:queue_app_statementofreasons_add", staff("403", "403")),
    ("admin:queue_app_statementofreasons_delete", staff("403", "403")),
    ("admin:queue_app_statementdelivery_add", staff("403", "403")),
    ("admin:queue_app_statementdelivery_delete", staff("403", "403")),
    # Appeals are filed through the API and decided in their lane: read-only here.
    ("admin:queue_app_appeal_add", staff("403", "403")),
    ("admin:queue_app_appeal_delete", staff("403", "403")),
    ("admin:queue_app_statementpolicy_delete", staff("403", "403")),
    # Clients are revoked and reason codes retired, never deleted.
    ("admin:queue_app_apiclient_delete", staff("403", "403")),
    ("admin:queue_app_reasoncode_delete", staff("403", "403")),
    # Configuration: the viewer may look, not add or delete; the superuser may.
    ("admin:queue_app_*_add", staff("403", "200")),
    ("admin:queue_app_*_delete", staff("403", "200")),
    ("admin:queue_app_*_changelist", staff("200", "200")),
    ("admin:queue_app_*_change", staff("200", "200")),  # view-only for the viewer
    ("admin:queue_app_*_history", staff("200", "200")),
    # -- accounts ---------------------------------------------------------------------------------
    ("login", row("200", "200", "200", "200", "200")),
    ("logout", row(LOGIN, LOGIN, LOGIN, LOGIN, LOGIN)),  # POST: logged out, back to the login
    ("password_change*", row(LOGIN, "200", "200", "200", "200")),
    # -- JSON API ---------------------------------------------------------------------------------
    # The OpenAPI document and its viewer are public: they describe, they grant nothing.
    ("api:openapi-*", row("200", "200", "200", "200", "200", "200", "200")),
    # A session is not an API credential: only a bearer token is (401 otherwise); a client
    # without the endpoint's scope is refused (403).
    ("api:create_item", row("401", "401", "401", "401", "401", "201+write", "403")),
    ("api:replace_evidence", row("401", "401", "401", "401", "401", "200+write", "403")),
    ("api:get_item", row("401", "401", "401", "401", "401", "200", "403")),
    ("api:put_attachment", row("401", "401", "401", "401", "401", "200+write", "403")),
    # A subject's items, only in the client's own queues (tests/clocks/test_api.py).
    ("api:list_items", row("401", "401", "401", "401", "401", "200", "403")),
    ("api:lease_batch", row("401", "401", "401", "401", "401", "200+write", "403")),
    ("api:decide", row("401", "401", "401", "401", "401", "201+write", "403")),
    ("api:release", row("401", "401", "401", "401", "401", "200+write", "403")),
    ("api:hold", row("401", "401", "401", "401", "401", "200+write", "403")),
    # Appeals: the platform's intake scope files one against a decision carried out in its
    # queue; reading one needs the same scope (the world has none: 404 for the scoped client).
    ("api:create_appeal", row("401", "401", "401", "401", "401", "201+write", "403")),
    ("api:get_appeal", row("401", "401", "401", "401", "401", "404", "403")),
    ("api:api-root", row("404", "404", "404", "404", "404", "404", "404")),
    ("api/v1/^(?P<path>.*)$", row("404", "404", "404", "404", "404", "404", "404")),
    # -- operations -------------------------------------------------------------------------------
    ("ops:dashboard", row(LOGIN, "403", "403", "200", "200")),
    # The oversight figures as files: whoever may see /ops/.
    ("ops:oversight_csv", row(LOGIN, "403", "403", "200", "200")),
    ("ops:oversight_json", row(LOGIN, "403", "403", "200", "200")),
    # The transparency report of a period as files: whoever may see /ops/.
    ("ops:transparency_csv", row(LOGIN, "403", "403", "200", "200")),
    ("ops:transparency_json", row(LOGIN, "403", "403", "200", "200")),
    # Retrying a dead effect job needs change_effectjob, as the admin's Retry action does.
    ("ops:retry_dead_job", row(LOGIN, "403", "403", "403", "302+write")),
    # The stop switches of automatic decisions: staff holding can_stop_automation (admin).
    ("ops:automation_all", row(LOGIN, "403", "403", "403", "302")),
    ("ops:automation_queue", row(LOGIN, "403", "403", "403", "302")),
    # Open by default for the internal network (METRICS_TOKEN closes it); health has no secrets.
    ("ops:metrics", row("200", "200", "200", "200", "200", "200", "200")),
    ("ops:healthz", row("200", "200", "200", "200", "200", "200", "200")),
    # -- reviewer console -------------------------------------------------------------------------
    ("home", row(LOGIN, "200", "200", "200", "200")),  # lists only the caller's own queues
    # Another queue's reviewer is told no (403) for a queue, and cannot tell an item of a queue
    # they cannot see from a missing one (404).
    ("queue-next", row(LOGIN, "403", "302+write", "403", "302+write")),
    ("item", row(LOGIN, "404", "200", "404", "200")),
    # The superuser may see every item, but alice's lease token does not work for anyone else:
    # the fence refuses, nothing is written.
    ("item-decide", row(LOGIN, "404", "302+write", "404", "302")),
    ("item-release", row(LOGIN, "404", "302+write", "404", "302")),
    ("item-renew", row(LOGIN, "404", "302+write", "404", "302")),
    # -- identity (queue_app/identity/) -----------------------------------------------------------
    # The access history says who holds which access: auth.view_user (the superuser) only.
    ("access-history", staff("403", "200")),
    ("access-history-csv", staff("403", "200")),
    # Resetting another's second factor needs auth.change_user (GET: the confirmation page).
    ("mfa-reset", staff("403", "200")),
    # Second factor: anyone signed in may enrol or verify their own. Non-staff without a device
    # are sent from verification to enrolment; staff here are verified (tests/conftest.py), so
    # enrolment sends them on.
    ("mfa-verify", row(LOGIN, "302", "302", "200", "200")),
    ("mfa-setup", row(LOGIN, "200", "200", "302", "302")),
    # Single sign-on is off in this world (no OIDC_ISSUER): its routes do not exist for anyone.
    # tests/identity/test_oidc_provider.py exercises them against a real provider.
    ("oidc_*", row("404", "404", "404", "404", "404")),
    # Attachments follow the item page's rule: the bytes to whoever may see the item, a reveal
    # recorded (an item event) for the same people; a superuser's reveal is recorded too.
    # Also one who may adjudicate, for an item with an adjudication task (no persona here is
    # such a user: tests/lanes/test_lane_attachments.py).
    ("item-attachment", row(LOGIN, "404", "200", "404", "200")),
    # A PDF's page drawn on the server: the same rule as its bytes (page 1 of the held item's PDF).
    ("item-attachment-page", row(LOGIN, "404", "200", "404", "200")),
    # Everyone signed in keeps their own viewing preferences: nothing to refuse.
    ("me-preferences", row(LOGIN, "200", "200", "200", "200")),
    # My work shows each signed-in person their own decisions only: nothing to refuse.
    ("my-work", row(LOGIN, "200", "200", "200", "200")),
    ("item-attachment-reveal", row(LOGIN, "404", "302+write", "404", "302+write")),
    # A suggestion's reveal follows the item page's rule and is fenced by alice's token; her
    # held item has no suggestion to reveal, so she is sent back to it with nothing written
    # (tests/suggestions/test_seen.py records a reveal).
    ("item-suggestion", row(LOGIN, "404", "302", "404", "302")),
    # Putting alice's item on hold is fenced by her token like release.
    ("item-hold", row(LOGIN, "404", "302+write", "404", "302")),
    # -- second-person lanes (alice holds a check of bob's decision) ------------------------------
    # Next check: alice renews her lease; another queue's reviewer and the viewer have no
    # access to the queue; the superuser finds nothing free (alice holds the one check).
    ("lane-next", row(LOGIN, "403", "302+write", "403", "302")),
    ("lane-task", row(LOGIN, "404", "200", "404", "200")),
    # Only the lease holder's token finishes a task: everyone else is fenced out, and gets
    # the task's page back as it is (409), nothing written.
    ("lane-confirm", row(LOGIN, "404", "302+write", "404", "409")),
    ("lane-return", row(LOGIN, "404", "302+write", "404", "409")),
    ("lane-release", row(LOGIN, "404", "302+write", "404", "302")),
    # The page's heartbeat: only the holder's token extends the lease (a plain post here).
    ("lane-renew", row(LOGIN, "404", "302+write", "404", "302")),
    # The task is a check: a QA or adjudication post on it finishes nothing (and alice lacks
    # can_overturn for adjudication). QA finds no QA task under the token (409, the page); the
    # adjudication form is refused first, "verified" being no overturn reason (400, the page).
    ("lane-qa", row(LOGIN, "404", "409", "404", "409")),
    ("lane-adjudicate", row(LOGIN, "404", "400", "404", "400")),
    # The same for an appeal's decision: the form is refused first ("verified" is no overturn
    # reason), and the task is a check, which no appeal form could finish.
    ("lane-appeal", row(LOGIN, "404", "400", "404", "400")),
]


def expected_for(route: Route) -> dict[str, str] | None:
    """Return the first table row whose pattern matches the route's name or pattern."""
    return next(
        (want for pattern, want in EXPECTED if fnmatch.fnmatchcase(route.key, pattern)), None
    )


def test_every_route_has_an_expected_answer_for_every_persona():
    routes = all_routes()
    assert len(routes) > 100  # the walk reached admin, the API and the console
    missing = [route.key for route in routes if expected_for(route) is None]
    assert not missing, f"add these routes to EXPECTED: {missing}"
    for route in routes:
        assert set(expected_for(route)) == set(PERSONAS), route.key


def test_every_table_row_matches_a_route():
    keys = [route.key for route in all_routes()]
    stale = [p for p, _ in EXPECTED if not any(fnmatch.fnmatchcase(k, p) for k in keys)]
    assert not stale, f"rows that match no route any more: {stale}"


@pytest.mark.parametrize("persona", PERSONAS)
def test_each_route_answers_the_persona_as_the_table_says(world, persona):
    wrong = {}
    for route in all_routes():
        want = expected_for(route)[persona]
        got = answer(world, persona, route)
        if got != want:
            wrong[route.key] = f"expected {want}, got {got}"
    assert not wrong, wrong
