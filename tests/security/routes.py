"""Every route the URLconf serves, found by walking the resolver, and a concrete request for each.

The authorization matrix iterates these, so a route added anywhere (an app, admin, the API) is
requested by every persona and must have an expected answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from queue_app.jsonutil import exact_dumps
from tests.security.conftest import World, decision_body


@dataclass(frozen=True)
class Route:
    """One resolvable route: its name (namespaced) or, when unnamed, its full pattern."""

    key: str
    pattern: str
    name: str | None


def all_routes() -> list[Route]:
    """Return every URL pattern reachable from the root URLconf, recursing into includes."""
    return list(_walk(get_resolver(), "", ""))


def _walk(resolver: URLResolver, prefix: str, namespace: str) -> Iterator[Route]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = namespace + (f"{entry.namespace}:" if entry.namespace else "")
            yield from _walk(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            pattern = prefix + str(entry.pattern)
            name = namespace + entry.name if entry.name else None
            yield Route(key=name or pattern, pattern=pattern, name=name)


# Write-only endpoints, requested with the method they accept; everything else is a GET.
POST_ROUTES = {
    "logout",
    "queue-next",
    "item-decide",
    "item-release",
    "item-renew",
    "item-hold",
    "ops:retry_dead_job",
    "ops:automation_all",
    "ops:automation_queue",
    "api:create_item",
    "api:lease_batch",
    "api:decide",
    "api:release",
    "api:hold",
    "api:create_appeal",
    "item-attachment-reveal",
    "item-suggestion",
    "lane-next",
    "lane-confirm",
    "lane-return",
    "lane-qa",
    "lane-adjudicate",
    "lane-appeal",
    "lane-release",
    "lane-renew",
}
PUT_ROUTES = {"api:replace_evidence", "api:put_attachment"}

_ADMIN_MODEL = re.compile(r"^admin:(?P<app>auth|queue_app|axes)_(?P<model>[a-z]+)_[a-z]+$")
_ADMIN_OBJECT_REDIRECT = re.compile(r"^admin/(?P<app>\w+)/(?P<model>\w+)/<path:object_id>/$")


@dataclass(frozen=True)
class Probe:
    method: str
    path: str
    data: Any = None
    content_type: str | None = None


def probe_for(route: Route, world: World) -> Probe:
    """Return a request that reaches this route with real objects, as its owner would send it."""
    path = _path_for(route, world)
    method = "POST" if route.key in POST_ROUTES else "PUT" if route.key in PUT_ROUTES else "GET"
    if route.key == "api:put_attachment":
        return Probe(method, path, attachment_png(), "image/png")
    if route.key.startswith("api:") and method != "GET":
        body = _api_body(route.key, world)
        return Probe(method, path, exact_dumps(body), "application/json")
    if method == "POST":
        return Probe(method, path, _form_for(route.key, world))
    return Probe(method, path)


def _path_for(route: Route, world: World) -> str:
    if route.name is None:
        if match := _ADMIN_OBJECT_REDIRECT.match(route.pattern):
            pk = world.sample_pk(match["app"], match["model"])
            return f"/admin/{match['app']}/{match['model']}/{pk}/"
        if route.pattern == "admin/(?P<url>.*)$":
            return "/admin/no-such-page/"
        if route.pattern == "api/v1/^(?P<path>.*)$":
            return "/api/v1/no-such-endpoint"
        raise AssertionError(f"no sample request for the unnamed route {route.pattern!r}")
    kwargs: dict[str, Any] = {}
    resolver_kwargs = _kwarg_names(route)
    if "object_id" in resolver_kwargs:
        match = _ADMIN_MODEL.match(route.key)
        if route.key == "admin:view_on_site":
            kwargs["content_type_id"] = world.content_type_id
            kwargs["object_id"] = world.held.pk
        else:
            assert match, route.key
            kwargs["object_id"] = world.sample_pk(match["app"], match["model"])
    if "id" in resolver_kwargs:  # admin:auth_user_password_change
        kwargs["id"] = world.users["reviewer"].pk
    if "queue_id" in resolver_kwargs:  # ops:automation_queue
        kwargs["queue_id"] = world.held.queue_id
    if "user_id" in resolver_kwargs:  # mfa-reset
        kwargs["user_id"] = world.users["reviewer"].pk
    if "item_id" in resolver_kwargs:
        kwargs["item_id"] = {
            "api:decide": world.robot_held.pk,
            "api:release": world.robot_held.pk,
            "api:hold": world.robot_held.pk,
            "api:replace_evidence": world.pending.pk,
            "api:put_attachment": world.pending.pk,
        }.get(route.key, world.held.pk)
    if "sha256" in resolver_kwargs:  # the attachment the world put on alice's held item
        kwargs["sha256"] = world.held_attachment
    if "page" in resolver_kwargs:  # item-attachment-page: the first page of the held item's PDF
        kwargs["sha256"] = world.held_pdf
        kwargs["page"] = 1
    if "name" in resolver_kwargs:
        kwargs["name"] = "matrix.png"
    if "slug" in resolver_kwargs:
        kwargs["slug"] = "kyc"
    if "decision_id" in resolver_kwargs:
        kwargs["decision_id"] = world.dead_job_decision.pk
    if "appeal_id" in resolver_kwargs:  # none in the world: a client learns nothing of others'
        kwargs["appeal_id"] = 999_999
    if "task_id" in resolver_kwargs:
        kwargs["task_id"] = world.lane_task.pk
    if "kind" in resolver_kwargs:
        kwargs["kind"] = "check"
    if "app_label" in resolver_kwargs:
        kwargs["app_label"] = "queue_app"
    if route.key == "api:list_items":  # a subject with items in kyc
        return reverse(route.name) + "?subject_key=cust-matrix"
    return reverse(route.name, kwargs=kwargs)


def _kwarg_names(route: Route) -> set[str]:
    return set(re.findall(r"<(?:\w+:)?(\w+)>", route.pattern)) | set(
        re.findall(r"\(\?P<(\w+)>", route.pattern)
    )


def _form_for(key: str, world: World) -> dict[str, str]:
    if key == "item-decide":
        # As the page posts it: with the queue it showed the item in (console/views.item_decide).
        body = decision_body(world.held, queue=world.held.queue_id)
        return {k: str(v) for k, v in body.items()}
    if key in ("item-release", "item-renew", "item-suggestion"):
        return {"lease_token": str(world.held.lease_token)}
    if key == "item-hold":  # alice's lease, a kyc hold reason, back in an hour
        until = timezone.localtime(timezone.now() + timedelta(hours=1))
        return {
            "lease_token": str(world.held.lease_token),
            "reason_code": "awaiting_documents",
            "hold_until": until.strftime("%Y-%m-%dT%H:%M"),
        }
    if key in ("ops:automation_all", "ops:automation_queue"):
        return {"action": "stop"}
    if key.startswith("lane-") and key != "lane-next":
        # alice's lane lease, with what each lane's form carries.
        return {
            "lease_token": str(world.lane_task.lease_token),
            "note": "matrix",
            "verdict": "approve",
            "reason_code": "verified",
            "outcome": "uphold",
        }
    return {}


def _api_body(key: str, world: World) -> dict[str, Any]:
    if key == "api:create_item":
        return {
            "queue": "kyc",
            "subject": "Matrix intake",
            "payload": {"amount": "1.00"},
            "idempotency_key": "matrix-1",
            "source_hash": "m1",
        }
    if key == "api:lease_batch":
        return {"batch_size": 1, "lease_seconds": 30}
    if key == "api:decide":
        return decision_body(world.robot_held)
    if key == "api:release":
        return {"lease_token": str(world.robot_held.lease_token)}
    if key == "api:hold":
        return {
            "lease_token": str(world.robot_held.lease_token),
            "reason_code": "awaiting_documents",
            "hold_until": (timezone.now() + timedelta(hours=1)).isoformat(),
        }
    if key == "api:replace_evidence":
        return {"payload": {"amount": "2.00"}}
    if key == "api:create_appeal":  # the affected person's complaint against bob's decision
        return {
            "reference": "matrix-appeal",
            "decision": world.decision.pk,
            "text": "Please look again.",
        }
    raise AssertionError(f"no body for {key}")


def attachment_png() -> bytes:
    """A small real PNG, as an upstream client would attach."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), "purple").save(out, format="PNG")
    return out.getvalue()
