"""Adjudication endpoints: automated workers lease batches and decide, fenced like reviewers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from ninja import Router, Status
from ninja.decorators import decorate_view

from queue_app import errors, services
from queue_app.api.auth import client_of, granted_queue, require_scope, visible_item
from queue_app.api.failures import ApiProblem, limit_body, refusals, responses
from queue_app.api.payloads import decision_out, leased_out, reload_decision
from queue_app.api.schemas import (
    DecisionIn,
    DecisionOut,
    HoldIn,
    HoldOut,
    ItemId,
    LeaseOut,
    LeaseRequest,
    QueueSlug,
    ReleaseIn,
    ReleaseOut,
)
from queue_app.models import ApiScope, ItemState, SuggestionView

router = Router(tags=["adjudication"])


@router.post(
    "/queues/{slug}/leases",
    response=responses({200: LeaseOut}, 403, 404, 413),
    openapi_extra=refusals(),
    summary="Lease a batch of items",
)
@decorate_view(limit_body)
def lease_batch(
    request: HttpRequest, slug: QueueSlug, body: LeaseRequest | None = None
) -> dict[str, Any]:
    """Lease up to batch_size items for lease_seconds; each comes with its token and evidence hash.

    An empty list means nothing is waiting: poll again later (with jitter).
    """
    body = body or LeaseRequest()  # an empty body means the defaults
    client = client_of(request)
    require_scope(client, ApiScope.ADJUDICATE)
    queue = granted_queue(client, slug)
    items = services.claim_batch(
        queue=queue,
        worker=client.user,
        n=body.batch_size,
        ttl=timedelta(seconds=body.lease_seconds),
    )
    return {
        "queue": queue.slug,
        "lease_seconds": body.lease_seconds,
        "items": [leased_out(item) for item in items],
    }


@router.post(
    "/items/{item_id}/decision",
    response=responses({200: DecisionOut, 201: DecisionOut}, 403, 404, 409, 413),
    openapi_extra=refusals(
        invalid_reason="`reason_code` is not one of the queue's codes for the verdict "
        "(`details.allowed` lists them).",
        invalid_verdict="the verdict is not available here (escalate, in a queue with "
        "nowhere to escalate to).",
    ),
    summary="Decide a leased item (fenced by its lease token and evidence hash)",
)
@decorate_view(limit_body)
def decide(request: HttpRequest, item_id: ItemId, body: DecisionIn) -> Status[dict[str, Any]]:
    """Record a verdict: 201 new; 200 for a retry of a completion that already succeeded.

    409 stale_lease or evidence_changed; 422 invalid_reason for a reason outside the closed set.
    """
    client = client_of(request)
    require_scope(client, ApiScope.ADJUDICATE)
    # The fence is the access check on the happy path: only a lease this client took (which
    # needed the queue) can close. The item is looked up only when the fence refuses.
    try:
        decision = services.submit_decision(
            item_id=item_id,
            reviewer=client.user,
            lease_token=body.lease_token,
            verdict=body.verdict,
            reason_code=body.reason_code,
            evidence_hash=body.evidence_hash,
            note=body.note,
            # The lease and the item carry the suggestion to the client: shown, as of now (the
            # database records nothing of it for an item without one).
            suggestion_view=SuggestionView.SHOWN,
            suggestion_shown_at=timezone.now(),
        )
    except errors.StaleLease:
        item = visible_item(client, item_id)
        # If this exact completion already went through (a retry after a lost response),
        # answer with that decision rather than an error or a second decision.
        earlier = services.find_completed_decision(
            item_id=item.pk,
            reviewer=client.user,
            lease_token=body.lease_token,
            verdict=body.verdict,
            reason_code=body.reason_code,
            evidence_hash=body.evidence_hash,
        )
        if earlier is None:
            raise
        return Status(200, decision_out(reload_decision(earlier)))
    except errors.InvalidReason as exc:
        item = visible_item(client, item_id)
        allowed = sorted(
            services.reason_codes_for(queue=item.queue, verdict=body.verdict).values_list(
                "code", flat=True
            )
        )
        raise ApiProblem(
            422,
            "invalid_reason",
            f"reason_code {body.reason_code!r} is not allowed for {body.verdict} in this queue; "
            f"allowed: {', '.join(allowed) or 'none'}.",
            {"field": "reason_code", "allowed": allowed},
        ) from exc
    return Status(201, decision_out(decision, fresh_from=(body.reason_code, client.user)))


@router.post(
    "/items/{item_id}/release",
    response=responses({200: ReleaseOut}, 403, 404, 409, 413),
    openapi_extra=refusals(),
    summary="Give a leased item back to its queue",
)
@decorate_view(limit_body)
def release(request: HttpRequest, item_id: ItemId, body: ReleaseIn) -> dict[str, Any]:
    """Release the lease (fenced by its token); 409 stale_lease if it is no longer yours."""
    client = client_of(request)
    require_scope(client, ApiScope.ADJUDICATE)
    try:
        services.release_lease(item_id=item_id, reviewer=client.user, lease_token=body.lease_token)
    except errors.StaleLease:
        visible_item(client, item_id)  # 404 for an item the client cannot see, else 409
        raise
    return {"id": item_id, "state": ItemState.PENDING}


@router.post(
    "/items/{item_id}/hold",
    response=responses({200: HoldOut}, 403, 404, 409, 413),
    openapi_extra=refusals(
        invalid_hold_reason="`reason_code` is not one of the queue's active hold reasons.",
        invalid_hold_time="`hold_until` is not in the future, or is later than the queue's "
        "maximum hold from now.",
    ),
    summary="Put a leased item on hold until a time (fenced by its lease token)",
)
@decorate_view(limit_body)
def hold(request: HttpRequest, item_id: ItemId, body: HoldIn) -> dict[str, Any]:
    """Set the item aside, waiting on something outside the queue (documents, a customer's reply).

    The lease ends; the item comes back to the queue at hold_until (or when its evidence is
    replaced), first in line; its deadline is pushed back by the hold. A retry of a hold that
    already went through (same token, reason and time) answers 200 with that hold again, and
    the item's state now, with hold_ended true if that hold has ended since; 409 stale_lease if
    the lease is no longer yours.
    """
    client = client_of(request)
    require_scope(client, ApiScope.ADJUDICATE)
    try:
        held = services.hold_item(
            item_id=item_id,
            reviewer=client.user,
            lease_token=body.lease_token,
            reason_code=body.reason_code,
            hold_until=body.hold_until,
        )
    except (
        errors.StaleLease,
        errors.NotPermitted,
        errors.InvalidHoldReason,
        errors.InvalidHoldTime,
    ):
        # 404 for an item the client cannot see (its queue's hold reasons and maximum hold
        # included), else the refusal as raised.
        visible_item(client, item_id)
        raise
    if held.get("retried"):
        visible_item(client, item_id)  # a recognised retry is answered only where a hold is
    return {
        "id": item_id,
        "state": held["state"],
        "reason_code": body.reason_code,
        "hold_until": held["hold_until"],
        "due_at": held["due_at"],
        "hold_ended": held["hold_ended"],
    }
