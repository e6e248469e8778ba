"""Intake endpoints: upstream systems push items, replace their evidence, and follow them."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from django.utils import timezone
from ninja import Router, Status
from ninja.decorators import decorate_view

from queue_app import errors, services
from queue_app.api.auth import client_of, find_queue, require_queue, require_scope, visible_item
from queue_app.api.failures import ApiProblem, limit_body, refusals, responses
from queue_app.api.payloads import item_out, subject_item_out
from queue_app.api.replica_reads import lag_tolerant, says_where_it_read
from queue_app.api.schemas import (
    SUBJECT_LIST_LIMIT,
    EvidenceIn,
    ItemId,
    ItemIn,
    ItemOut,
    SubjectItemsOut,
    SubjectKey,
    bounded_int,
)
from queue_app.models import ApiScope

router = Router(tags=["intake"])


@router.post(
    "/items",
    response=responses({200: ItemOut, 201: ItemOut}, 403, 409, 413),
    openapi_extra=refusals(
        unknown_queue="there is no queue with the slug in `queue`.",
        invalid_deadline="both `due_at` and `sla_seconds` were given.",
        invalid_suggestion="the suggestion's verdict or reason code is not one this queue's "
        "reviewers can choose (`details` names the field); nothing was written.",
    ),
    summary="Push an item into a queue (idempotent per client, queue and key)",
)
@decorate_view(limit_body)
def create_item(request: HttpRequest, body: ItemIn) -> Status[dict[str, Any]]:
    """Create an item; replaying a key with the same source_hash returns the existing one (200).

    Keys are this client's own, per queue: another client's identical key names another item.
    The same key with a different source_hash is a 409 (naming the item only while it is in a
    queue this client may see). An unknown queue is a 422. The deadline is due_at, or
    sla_seconds from receipt, or the queue's default SLA; both at once is a 422
    invalid_deadline.
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
        due_at=body.due_at,
        sla_seconds=body.sla_seconds,
        subject_key=body.subject_key,
        suggestion=body.suggestion.model_dump() if body.suggestion is not None else None,
    )
    if created:
        # jsonb normalises what it stores (-0.0 is 0.0, 1E+2 is 100, keys shortest first):
        # answer with the row as stored, byte for byte what a later GET returns, and the
        # evidence hash a reviewer's page will show.
        item.refresh_from_db(fields=["payload", "suggestion"])
        item.queue = queue
    return Status(201 if created else 200, item_out(item, client))


@router.put(
    "/items/{item_id}/evidence",
    response=responses({200: ItemOut}, 403, 404, 409, 413),
    openapi_extra=refusals(),
    summary="Replace the evidence of a pending, leased or held item (a hold ends at once)",
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
@decorate_view(says_where_it_read)
def get_item(request: HttpRequest, item_id: ItemId) -> dict[str, Any]:
    """Return state, standing outcome, decisions in order (with supersedes) and applied status.

    Read from the replica when one is up and at most REVIEW_API_REPLICA_MAX_LAG_SECONDS behind
    (else, or if the replica does not have the item yet, from the primary); the response header
    X-Review-Read-From says which. Send `X-Review-Read-From: primary` to read your own write.
    """
    client = client_of(request)
    if not (client.can_intake or client.can_adjudicate):
        raise errors.NotPermitted("This API client has no scope.")
    return lag_tolerant(request, lambda: item_out(visible_item(client, item_id), client))


@router.get(
    "/items",
    response=responses({200: SubjectItemsOut}, 403),
    openapi_extra=refusals(),
    tags=["items"],
    summary="A subject's items, newest first, in the queues this client is granted",
)
@decorate_view(says_where_it_read)
def list_items(
    request: HttpRequest,
    subject_key: SubjectKey,
    limit: Annotated[int, bounded_int(*SUBJECT_LIST_LIMIT, strict=False)] = 20,
) -> dict[str, Any]:
    """List the items of one subject_key (the customer, account or merchant), newest first.

    Items in queues this client is not granted are left out, never counted: the
    same access rule as every other endpoint, applied in the one query. Read from the replica
    as GET /items/{item_id} is (header X-Review-Read-From).
    """
    client = client_of(request)
    if not (client.can_intake or client.can_adjudicate):
        raise errors.NotPermitted("This API client has no scope.")
    rows = lag_tolerant(
        request,
        lambda: services.subject_history(subject_key=subject_key, user=client.user, limit=limit),
    )
    now = timezone.now()
    return {"subject_key": subject_key, "items": [subject_item_out(row, now) for row in rows]}
