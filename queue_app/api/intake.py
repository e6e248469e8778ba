"""Intake endpoints: upstream systems push items, replace their evidence, and follow them."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status
from ninja.decorators import decorate_view

from queue_app import errors, services
from queue_app.api.auth import client_of, find_queue, require_queue, require_scope, visible_item
from queue_app.api.failures import ApiProblem, limit_body, refusals, responses
from queue_app.api.render import item_out
from queue_app.api.schemas import EvidenceIn, ItemId, ItemIn, ItemOut
from queue_app.models import ApiScope

router = Router(tags=["intake"])


@router.post(
    "/items",
    response=responses({200: ItemOut, 201: ItemOut}, 403, 409, 413),
    openapi_extra=refusals(unknown_queue="there is no queue with the slug in `queue`."),
    summary="Push an item into a queue (idempotent per client, queue and key)",
)
@decorate_view(limit_body)
def create_item(request: HttpRequest, body: ItemIn) -> Status[dict[str, Any]]:
    """Create an item; replaying a key with the same source_hash returns the existing one (200).

    Keys are this client's own, per queue: another client's identical key names another item.
    The same key with a different source_hash is a 409 (naming the item only while it is in a
    queue this client may see). An unknown queue is a 422.
    """
    client = client_of(request)
    require_scope(client, ApiScope.INTAKE)
    queue = find_queue(client, body.queue)
    if queue is None:
        raise ApiProblem(
            422,
            "unknown_queue",
            f"Invalid request: queue: there is no queue named {body.queue!r}.",
            [{"field": "queue", "type": "unknown_queue", "message": "no such queue"}],
        )
    require_queue(client, queue)
    item, created = services.create_item(
        queue=queue,
        subject=body.subject,
        payload=body.payload,
        idempotency_key=body.idempotency_key,
        source_hash=body.source_hash,
        priority=body.priority,
        trace_id=body.trace_id,
        client=client,
    )
    if created:
        # jsonb normalises what it stores (-0.0 is 0.0, 1E+2 is 100, keys shortest first):
        # answer with the row as stored, byte for byte what a later GET returns, and the
        # evidence hash a reviewer's page will show.
        item.refresh_from_db(fields=["payload"])
        item.queue = queue
    return Status(201 if created else 200, item_out(item, client))


@router.put(
    "/items/{item_id}/evidence",
    response=responses({200: ItemOut}, 403, 404, 409, 413),
    openapi_extra=refusals(),
    summary="Replace the evidence of a pending or leased item",
)
@decorate_view(limit_body)
def replace_evidence(request: HttpRequest, item_id: ItemId, body: EvidenceIn) -> dict[str, Any]:
    """Replace payload (and optionally subject); a holder's later submit gets evidence_changed.

    Refused with 409 already_decided once the item is decided.
    """
    client = client_of(request)
    require_scope(client, ApiScope.INTAKE)
    item = visible_item(client, item_id)
    updated = services.replace_evidence(
        item_id=item.pk, actor=client.user, payload=body.payload, subject=body.subject
    )
    updated.queue = item.queue
    return item_out(updated, client)


@router.get(
    "/items/{item_id}",
    response=responses({200: ItemOut}, 403, 404),
    openapi_extra=refusals(),
    tags=["items"],
    summary="An item's state, standing outcome and decisions",
)
def get_item(request: HttpRequest, item_id: ItemId) -> dict[str, Any]:
    """Return state, standing outcome, decisions in order (with supersedes) and applied status."""
    client = client_of(request)
    if not (client.can_intake or client.can_adjudicate):
        raise errors.NotPermitted("This API client has no scope.")
    return item_out(visible_item(client, item_id), client)
