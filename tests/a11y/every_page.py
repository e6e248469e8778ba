"""Every page we serve, and how to reach it: the list test_axe_every_page.py checks with axe.

REGISTRY maps each route of the URLconf (its name, or its pattern when unnamed; fnmatch
patterns group the admin's per-model routes) to the visits that show it: who is signed in, the
address in the seeded demo (tests/demo_site.py), the status it answers with, and what to do on
the page first (open a dialog, submit a wrong password). A route that serves no page of its
own says why instead (NotAPage): JSON, a file, a POST-only endpoint, a redirect.
test_every_route_has_an_entry fails for a route added without one, so a new page cannot
escape the check. EXTRA holds the pages no route names: Django's 404, a CSRF refusal, the 503
and 500 pages.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.urls import reverse

from tests.demo_site import Demo
from tests.security.routes import Route, all_routes

Page = Any  # playwright.sync_api.Page


@dataclass(frozen=True)
class Visit:
    """One state of one page: who looks, where, the status it answers, what to do first."""

    id: str
    user: str | None  # a username from the seeded demo; None: signed out
    path: Callable[[Demo], str]
    status: int = 200
    then: Callable[[Page], None] | None = None
    # A page no request can make the server answer on purpose (the database gone, a crash):
    # rendered here by the code that renders it there, and served to the browser at `path`.
    rendered: Callable[[Demo], Any] | None = None


@dataclass(frozen=True)
class NotAPage:
    """A route that renders no page of its own, and why."""

    reason: str


def at(path: str) -> Callable[[Demo], str]:
    return lambda demo: path


def named(name: str, **kwargs: Callable[[Demo], Any]) -> Callable[[Demo], str]:
    """The route's address, its arguments taken from the demo."""
    return lambda demo: reverse(name, kwargs={k: f(demo) for k, f in kwargs.items()})


# -- what to do on a page before axe looks -------------------------------------------------------


def press(key: str, *, visible: str | None = None) -> Callable[[Page], None]:
    def then(page: Page) -> None:
        page.locator("body").press(key)
        if visible:
            page.locator(visible).first.wait_for(state="visible")

    return then


def wrong_password(page: Page) -> None:
    page.get_by_label("Username").fill("nobody")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    page.locator(".errornote").first.wait_for()


def locked_out(page: Page) -> None:
    # tests/a11y/test_axe_every_page.py records enough failures for "locked-out" first.
    page.get_by_label("Username").fill("locked-out")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()


def without_csrf_token(page: Page) -> None:
    page.evaluate(
        "document.querySelectorAll('[name=csrfmiddlewaretoken]').forEach(e => e.remove())"
    )
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()


def reveal_first_image(page: Page) -> None:
    from playwright.sync_api import expect

    veiled = page.locator(".veiled")
    before = veiled.count()
    page.get_by_role("button", name="Reveal image").first.click()
    expect(veiled).to_have_count(before - 1)


# -- the registry --------------------------------------------------------------------------------

POST_ONLY = (
    "POST only: a form's action; a GET is answered by the refusal page checked at item-decide"
)
JSON = "JSON for API clients, no page"

_ITEM = {"item_id": lambda d: d.item_mine}

REGISTRY: dict[str, list[Visit] | NotAPage] = {
    # -- the console ---------------------------------------------------------------------------
    "home": [
        Visit("home-reviewer-with-a-lease", "alice", at("/")),
        Visit("home-checker-with-lanes", "carol", at("/")),
        Visit("home-admin-with-adjudication", "admin", at("/")),
        Visit("home-no-queues", "mallory", at("/")),
    ],
    "me-preferences": [Visit("me-preferences", "alice", at("/me/preferences/"))],
    "my-work": [
        Visit("my-work", "bob", at("/my-work/")),
        Visit("my-work-search", "bob", at("/my-work/?subject=Mei")),
        Visit("my-work-refused-search", "bob", at("/my-work/?item=-1"), status=200),
    ],
    "item": [
        Visit("item-mine", "alice", lambda d: f"/items/{d.item_mine}/"),
        Visit("item-verdict-chosen", "alice", lambda d: f"/items/{d.item_mine}/", then=press("a")),
        Visit(
            "item-shortcuts-dialog",
            "alice",
            lambda d: f"/items/{d.item_mine}/",
            then=press("?", visible="#shortcut-help"),
        ),
        Visit("item-suggestion", "alice", lambda d: f"/items/{d.item_with_suggestion}/"),
        Visit("item-sensitive-veiled", "alice", lambda d: f"/items/{d.item_sensitive}/"),
        Visit(
            "item-sensitive-revealed",
            "alice",
            lambda d: f"/items/{d.item_sensitive}/",
            then=reveal_first_image,
        ),
        Visit("item-held-by-another", "alice", lambda d: f"/items/{d.item_held_by_other}/"),
        Visit("item-pending", "alice", lambda d: f"/items/{d.item_pending}/"),
        Visit("item-decided", "alice", lambda d: f"/items/{d.item_decided}/"),
        Visit("item-on-hold", "alice", lambda d: f"/items/{d.item_on_hold}/"),
        Visit("item-no-such", "alice", at("/items/999999999/"), status=404),
    ],
    "item-decide": [
        Visit("refused-post-only", "alice", lambda d: f"/items/{d.item_mine}/decide/", status=405),
    ],
    "queue-next": NotAPage(POST_ONLY),
    "item-release": NotAPage(POST_ONLY),
    "item-renew": NotAPage(POST_ONLY),
    "item-hold": NotAPage(POST_ONLY),
    "item-suggestion": NotAPage(POST_ONLY),
    "item-attachment-reveal": NotAPage(POST_ONLY),
    "item-attachment": NotAPage("a download: the attachment's bytes (an image or a PDF)"),
    "item-attachment-page": NotAPage("a PNG: one page of a PDF attachment, drawn on the server"),
    "lane-task": [
        Visit("lane-check", "carol", lambda d: f"/lanes/{d.check_task}/"),
        Visit("lane-qa", "carol", lambda d: f"/lanes/{d.qa_task}/"),
        Visit("lane-adjudication", "admin", lambda d: f"/lanes/{d.adjudication_task}/"),
        Visit("lane-appeal", "admin", lambda d: f"/lanes/{d.appeal_task}/"),
    ],
    **{
        name: NotAPage(POST_ONLY)
        for name in (
            "lane-next",
            "lane-confirm",
            "lane-return",
            "lane-qa",
            "lane-adjudicate",
            "lane-appeal",
            "lane-release",
            "lane-renew",
        )
    },
    # -- operations ----------------------------------------------------------------------------
    "ops:dashboard": [
        Visit("ops", "admin", at("/ops/")),
        Visit("forbidden", "mallory", at("/ops/"), status=403),
    ],
    "ops:retry_dead_job": NotAPage(POST_ONLY),
    "ops:automation_all": NotAPage(POST_ONLY),
    "ops:automation_queue": NotAPage(POST_ONLY),
    "ops:oversight_csv": NotAPage("a CSV download"),
    "ops:oversight_json": NotAPage(JSON),
    "ops:transparency_csv": NotAPage("a CSV download"),
    "ops:transparency_json": NotAPage(JSON),
    "ops:metrics": NotAPage("Prometheus text for a scraper"),
    "ops:healthz": NotAPage("a health probe's JSON"),
    # -- accounts ------------------------------------------------------------------------------
    "login": [
        Visit("login", None, at("/accounts/login/")),
        Visit("login-wrong-password", None, at("/accounts/login/"), then=wrong_password),
        Visit("login-locked-out", None, at("/accounts/login/"), then=locked_out),
        Visit("refused-csrf", None, at("/accounts/login/"), then=without_csrf_token),
    ],
    "logout": NotAPage("POST only (Django 5): the sign-out button's action"),
    "password_change": [Visit("password-change", "alice", at("/accounts/password_change/"))],
    "password_change_done": [
        Visit("password-change-done", "alice", at("/accounts/password_change/done/"))
    ],
    "mfa-verify": [Visit("second-factor-code", "frank", at("/accounts/mfa/"))],
    "mfa-setup": [Visit("second-factor-enrolment", "erin", at("/accounts/mfa/setup/"))],
    "oidc_*": NotAPage(
        "single sign-on's redirects (404 while OIDC_ISSUER is unset; the 404 page is checked)"
    ),
    # -- the API -------------------------------------------------------------------------------
    "api:openapi-view": [Visit("api-docs", None, at("/api/v1/docs"))],
    "api:openapi-json": NotAPage("the OpenAPI document (JSON) the docs page reads"),
    "api:*": NotAPage(JSON),
    "api/v1/^(?P<path>.*)$": NotAPage(JSON + " (the API's 404)"),
    # -- identity pages in the admin -----------------------------------------------------------
    "access-history": [Visit("access-history", "admin", at("/admin/access-history/"))],
    "access-history-csv": NotAPage("a CSV download"),
    "mfa-reset": [
        Visit(
            "admin-second-factor-reset",
            "admin",
            named("mfa-reset", user_id=lambda d: d.samples["user:frank"]),
        )
    ],
    # -- the admin -----------------------------------------------------------------------------
    "admin:index": [Visit("admin-index", "admin", at("/admin/"))],
    "admin:app_list": [
        Visit(f"admin-app-{app}", "admin", at(f"/admin/{app}/"))
        for app in ("queue_app", "auth", "axes")
    ],
    "admin:login": [Visit("admin-login", None, at("/admin/login/"))],
    "admin:logout": NotAPage("POST only (Django 5): the sign-out button's action"),
    "admin:password_change": [
        Visit("admin-password-change", "admin", at("/admin/password_change/"))
    ],
    "admin:password_change_done": [
        Visit("admin-password-change-done", "admin", at("/admin/password_change/done/"))
    ],
    "admin:jsi18n": NotAPage("JavaScript (the admin's translations)"),
    "admin:autocomplete": NotAPage(JSON + " (the admin's autocomplete)"),
    "admin:view_on_site": NotAPage("a redirect to the object's own page"),
    "admin/(?P<url>.*)$": [Visit("not-found-admin", "admin", at("/admin/no-such-page/"), 404)],
    "admin/*/<path:object_id>/": NotAPage("a redirect to the object's change page"),
    "admin:queue_app_decision_overturn": [
        Visit(
            "admin-overturn",
            "admin",
            named("admin:queue_app_decision_overturn", object_id=lambda d: d.decision),
        )
    ],
    "admin:auth_user_password_change": [
        Visit(
            "admin-user-password",
            "admin",
            named("admin:auth_user_password_change", id=lambda d: d.samples["auth.user"]),
        )
    ],
}


# The admin's per-model pages. Every list and every object's change form is checked (each has
# its own columns, filters, fields and inlines), and every add form the superuser may use; an
# add or delete nobody may make answers the admin's refusal, checked once (admin-refused).
# History and delete pages are one template each for every model (a table of changes; a list
# of what would go): checked on the models below.
ADMIN_SAMPLED = {
    "history": ("queue_app.queue", "queue_app.reviewitem", "auth.user"),
    "delete": ("queue_app.queue", "auth.group"),
}


def _admin_allows(model: Any, action: str) -> bool:
    """Whether the model's admin lets a superuser add (or delete) at all."""
    from django.contrib.auth.models import User
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = User(is_superuser=True, is_staff=True, is_active=True)
    return bool(getattr(admin.site._registry[model], f"has_{action}_permission")(request))


def _admin_visits() -> dict[str, list[Visit] | NotAPage]:
    entries: dict[str, list[Visit] | NotAPage] = {}
    refusal_checked = False
    for model in admin.site._registry:
        app, name = model._meta.app_label, model._meta.model_name
        prefix, key, label = f"admin:{app}_{name}", f"{app}.{name}", f"{app}-{name}"
        label = label.replace("_", "-")

        def sample(demo: Demo, key: str = key) -> int:
            assert key in demo.samples, f"the seeded demo has no {key} row for its pages"
            return demo.samples[key]

        entries[f"{prefix}_changelist"] = [
            Visit(f"admin-{label}-list", "admin", named(f"{prefix}_changelist"))
        ]
        entries[f"{prefix}_change"] = [
            Visit(f"admin-{label}-change", "admin", named(f"{prefix}_change", object_id=sample))
        ]
        for action in ("add", "delete"):
            if _admin_allows(model, action):
                continue
            if not refusal_checked and action == "add":
                entries[f"{prefix}_add"] = [
                    Visit("admin-refused", "admin", named(f"{prefix}_add"), status=403)
                ]
                refusal_checked = True
            else:
                entries[f"{prefix}_{action}"] = NotAPage(
                    f"nobody may {action} a {key} here: the refusal page, checked at admin-refused"
                )
        if f"{prefix}_add" not in entries:
            entries[f"{prefix}_add"] = [
                Visit(f"admin-{label}-add", "admin", named(f"{prefix}_add"))
            ]
        for page, models in ADMIN_SAMPLED.items():
            if f"{prefix}_{page}" in entries:
                continue
            if key in models:
                entries[f"{prefix}_{page}"] = [
                    Visit(
                        f"admin-{label}-{page}",
                        "admin",
                        named(f"{prefix}_{page}", object_id=sample),
                    )
                ]
            else:
                entries[f"{prefix}_{page}"] = NotAPage(
                    f"the admin's {page} page, one template for every model: checked on "
                    + ", ".join(models)
                )
    return entries


REGISTRY.update(_admin_visits())

# Pages no route names: what Django answers when nothing matches, or a middleware refuses, or
# the database is gone (served by the test from the real renderer, since no route fails on
# purpose).
EXTRA: list[Visit] = [
    Visit("not-found", None, at("/no-such-page/"), status=404),
    Visit("not-found-signed-in", "alice", at("/no-such-page/"), status=404),
    Visit("unavailable", None, at("/a11y-only/503/"), status=503, rendered=lambda d: _503()),
    Visit("server-error", None, at("/a11y-only/500/"), status=500, rendered=lambda d: _500()),
]


def _503() -> Any:
    from django.test import RequestFactory

    from queue_app.error_middleware import unavailable_response

    return unavailable_response(RequestFactory().get("/items/1/"))


def _500() -> Any:
    from django.test import RequestFactory
    from django.views import defaults

    return defaults.server_error(RequestFactory().get("/items/1/"))


def entry_for(route: Route) -> list[Visit] | NotAPage | None:
    """The registry's entry for a route: by exact key, else the first pattern that matches."""
    if route.key in REGISTRY:
        return REGISTRY[route.key]
    for pattern, entry in REGISTRY.items():
        if fnmatch.fnmatchcase(route.key, pattern):
            return entry
    return None


def visits() -> list[Visit]:
    """Every visit: one or more per page the URLconf serves, then the pages no route names."""
    seen: dict[str, Visit] = {}
    for route in all_routes():
        entry = entry_for(route)
        if isinstance(entry, list):
            for visit in entry:
                seen.setdefault(visit.id, visit)
    for visit in EXTRA:
        seen.setdefault(visit.id, visit)
    return list(seen.values())
