"""The JSON API under /api/v1/: intake for upstream systems, batch leases for adjudicators.

django-ninja, because the pydantic schemas that validate each request are also what the OpenAPI
document (/api/v1/openapi.json, browsable at /api/v1/docs) is generated from: the published
contract cannot drift from the code. Endpoints only authenticate, check scope and queue, and
call queue_app.services; every failure leaves as one JSON shape:

    {"error": {"code": "stale_lease", "message": "words for a person", "details": ...}}

Numbers are exact end to end: bodies are parsed with Decimal for every non-integer number and
responses are rendered with queue_app.jsonutil.exact_dumps, so 12345678901234.57 stays that.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Status
from ninja.decorators import decorate_view
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.renderers import BaseRenderer

from queue_app import errors, services
from queue_app.api.auth import ApiTokenAuth, require_queue, require_scope
from queue_app.api.schemas import (
    MAX_BODY_BYTES,
    DecisionIn,
    DecisionOut,
    ErrorOut,
    EvidenceIn,
    ItemId,
    ItemIn,
    ItemOut,
    LeaseOut,
    LeaseRequest,
    QueueSlug,
    ReleaseIn,
    ReleaseOut,
)
from queue_app.evidence import evidence_hash
from queue_app.jsonutil import ExactDecoder, exact_dumps
from queue_app.models import ApiClient, ApiScope, Decision, ItemState, Queue, ReviewItem

logger = logging.getLogger("queue_app.api")


# -- wire format --------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class ExactParser(Parser):
    """Parse JSON bodies keeping every non-integer number as Decimal (never a float)."""

    def parse_body(self, request: HttpRequest) -> Any:
        # NaN and Infinity are not JSON; the stdlib accepts them unless told otherwise.
        return json.loads(request.body, cls=ExactDecoder, parse_constant=_refuse_constant)


class ExactRenderer(BaseRenderer):
    """Render responses with exact_dumps: Decimal values digit for digit."""

    media_type = "application/json"

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> str:
        return exact_dumps(data)


api = NinjaAPI(
    title="Review Console API",
    version="1",
    description=(
        "Intake of review items with idempotency keys, and batch leases for automated "
        "adjudicators, fenced by lease tokens exactly as reviewers are. Authenticate with "
        "`Authorization: Bearer <token>` (API clients are created in Django admin). Request "
        f"bodies are limited to {MAX_BODY_BYTES} bytes (413 beyond). Every error has the shape "
        '`{"error": {"code", "message", "details"}}`.'
    ),
    auth=ApiTokenAuth(),
    parser=ExactParser(),
    renderer=ExactRenderer(),
    urls_namespace="api",
)


def error_response(
    request: HttpRequest, status: int, code: str, message: str, details: Any = None
) -> HttpResponse:
    """Return the one error shape every failure of the API leaves as."""
    body = {"error": {"code": code, "message": message, "details": details}}
    return api.create_response(request, body, status=status)


class ApiProblem(Exception):
    """A request the API refuses for a reason of its own (not a queue operation's error)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details


# Queue operation failures → (HTTP status, code). Most specific first; the base class last.
_REVIEW_ERRORS: list[tuple[type[errors.ReviewError], int, str]] = [
    (errors.StaleLease, 409, "stale_lease"),
    (errors.EvidenceChanged, 409, "evidence_changed"),
    (errors.IdempotencyConflict, 409, "idempotency_conflict"),
    (errors.AlreadyDecided, 409, "already_decided"),
    (errors.AlreadySuperseded, 409, "already_superseded"),
    (errors.InvalidReason, 422, "invalid_reason"),
    (errors.InvalidVerdict, 422, "invalid_verdict"),
    (errors.InvalidBounds, 422, "out_of_range"),
    (errors.NotPermitted, 403, "forbidden"),
    (errors.ItemNotFound, 404, "not_found"),
    (errors.ReviewError, 400, "bad_request"),
]

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    429: "too_many_requests",
}


@api.exception_handler(errors.ReviewError)
def _review_error(request: HttpRequest, exc: errors.ReviewError) -> HttpResponse:
    status, code = next((s, c) for cls, s, c in _REVIEW_ERRORS if isinstance(exc, cls))
    return error_response(request, status, code, exc.message, getattr(exc, "details", None))


@api.exception_handler(ApiProblem)
def _api_problem(request: HttpRequest, exc: ApiProblem) -> HttpResponse:
    return error_response(request, exc.status, exc.code, exc.message, exc.details)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    problems = []
    for error in exc.errors:
        # loc is (source, name...) and, for a body, (source, body param, field...): a person
        # wants the field path ("batch_size", "payload.amount", "item_id").
        source, *path = error.get("loc", ("body",))
        if source == "body" and len(path) > 1:
            path = path[1:]
        field = ".".join(str(part) for part in path) or str(source)
        problems.append({"field": field, "type": error.get("type"), "message": error.get("msg")})
    message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return error_response(request, 422, "invalid", f"Invalid request: {message}", problems)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error_response(
        request,
        401,
        "unauthorized",
        "Send a valid, unrevoked API token as 'Authorization: Bearer <token>'.",
    )
    response["WWW-Authenticate"] = 'Bearer realm="review-console"'
    return response


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    message = exc.message
    if exc.status_code == 400 and message.startswith("Cannot parse request body"):
        message = "The request body is not valid JSON."
    code = _HTTP_CODES.get(exc.status_code, "error")
    return error_response(request, exc.status_code, code, message)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, 404, "not_found", "Not found.")


@api.exception_handler(OperationalError)
def _database_busy(request: HttpRequest, exc: OperationalError) -> HttpResponse:
    # Lock and statement timeouts (set on every claim and fenced write) mean "busy", not
    # "broken": the client should retry shortly. Anything else is an outage.
    sqlstate = getattr(getattr(exc, "__cause__", None), "sqlstate", None)
    if sqlstate in ("55P03", "57014"):
        response = error_response(request, 503, "busy", "The database is busy; retry in a moment.")
        response["Retry-After"] = "1"
        return response
    logger.exception("database error in API request")
    return error_response(request, 503, "unavailable", "The database is unavailable.")


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unexpected error in API request", extra={"path": request.path})
    return error_response(
        request, 500, "internal_error", "Something went wrong on our side; it has been logged."
    )


def limit_body(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Refuse a body over MAX_BODY_BYTES with 413, judged before the body is read or parsed."""

    @functools.wraps(run)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > MAX_BODY_BYTES:
            return error_response(
                request,
                413,
                "payload_too_large",
                f"The request body is {declared} bytes; the limit is {MAX_BODY_BYTES} bytes.",
                {"limit_bytes": MAX_BODY_BYTES},
            )
        return run(request, *args, **kwargs)

    return wrapper


def _responses(success: dict[int, Any], *failures: int) -> dict[int, Any]:
    """Declare an operation's success schemas and the error statuses it can answer with."""
    return {**success, **dict.fromkeys((400, 401, 422, 503, *failures), ErrorOut)}


# -- helpers ------------------------------------------------------------------------------------


def _client(request: HttpRequest) -> ApiClient:
    return request.auth  # type: ignore[attr-defined, no-any-return]


def _item_for(client: ApiClient, item_id: int) -> ReviewItem:
    # An item in a queue the client is not granted does not exist, as far as it can tell.
    item = (
        ReviewItem.objects.select_related("queue")
        .filter(pk=item_id, queue__api_clients=client)
        .first()
    )
    if item is None:
        raise errors.ItemNotFound()
    return item


def _queue_for(client: ApiClient, slug: str) -> Queue:
    queue = Queue.objects.filter(slug=slug).first()
    if queue is None:
        raise ApiProblem(404, "not_found", f"No queue named {slug!r}.")
    require_queue(client, queue)
    return queue


def _applied(decision: Decision) -> tuple[str, Any]:
    """Return (status, applied_at) of the decision's effect; relations must be preloaded."""
    if hasattr(decision, "applied"):
        return "applied", decision.applied.applied_at
    job = getattr(decision, "effect_job", None)
    return ("dead" if job is not None and job.dead else "pending"), None


def _decision_out(
    decision: Decision,
    *,
    fresh_from: tuple[str, Any] | None = None,
) -> dict[str, Any]:
    """Render a decision; fresh_from=(reason code, reviewer) for one just inserted."""
    if fresh_from is not None:
        # Just inserted in this request: its reason and author are the ones sent, and its
        # effect cannot have been applied yet; no need to read any of it back.
        (reason_code, reviewer), (applied, applied_at) = fresh_from, ("pending", None)
    else:
        reason_code, reviewer = decision.reason_code.code, decision.reviewer
        applied, applied_at = _applied(decision)
    return {
        "id": decision.pk,
        "item_id": decision.item_id,
        "verdict": decision.verdict,
        "reason_code": reason_code,
        "evidence_hash": decision.evidence_hash,
        "note": decision.note,
        "reviewer": reviewer.get_username(),
        "lease_token": decision.lease_token,
        "supersedes": decision.supersedes_id,
        "corrected_verdict": decision.corrected_verdict,
        "created_at": decision.created_at,
        "applied": applied,
        "applied_at": applied_at,
    }


def _item_out(item: ReviewItem, client: ApiClient) -> dict[str, Any]:
    decisions = services.item_decisions(item_id=item.pk)
    superseded = {d.supersedes_id for d in decisions if d.supersedes_id}
    standing = [d for d in decisions if d.pk not in superseded]
    return {
        "id": item.pk,
        "queue": item.queue.slug,
        "state": item.state,
        "subject": item.subject,
        "priority": item.priority,
        "payload": item.payload,
        "evidence_hash": evidence_hash(subject=item.subject, payload=item.payload),
        "idempotency_key": item.idempotency_key,
        "source_hash": item.source_hash,
        "trace_id": item.trace_id,
        "created_at": item.created_at,
        "evidence_updated_at": item.evidence_updated_at,
        "decided_at": item.decided_at,
        "lease_count": item.lease_count,
        "lease_expires": item.lease_expires,
        "leased_to_you": item.state == ItemState.LEASED and item.lease_owner_id == client.user_id,
        "standing_outcome": standing[-1].standing_verdict if standing else None,
        "decisions": [_decision_out(d) for d in decisions],
    }


# -- intake -------------------------------------------------------------------------------------


@api.post(
    "/items",
    response=_responses({200: ItemOut, 201: ItemOut}, 403, 409, 413),
    tags=["intake"],
    summary="Push an item into a queue (idempotent per key)",
)
@decorate_view(limit_body)
def create_item(request: HttpRequest, body: ItemIn) -> Status[dict[str, Any]]:
    """Create an item; replaying a key with the same source_hash returns the existing one (200).

    The same key with a different source_hash (or queue) is a 409 naming the item it conflicts
    with. An unknown queue is a 422.
    """
    client = _client(request)
    require_scope(client, ApiScope.INTAKE)
    queue = Queue.objects.filter(slug=body.queue).first()
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
    )
    item.queue = queue
    return Status(201 if created else 200, _item_out(item, client))


@api.put(
    "/items/{item_id}/evidence",
    response=_responses({200: ItemOut}, 403, 404, 409, 413),
    tags=["intake"],
    summary="Replace the evidence of a pending or leased item",
)
@decorate_view(limit_body)
def replace_evidence(request: HttpRequest, item_id: ItemId, body: EvidenceIn) -> dict[str, Any]:
    """Replace payload (and optionally subject); a holder's later submit gets evidence_changed.

    Refused with 409 already_decided once the item is decided.
    """
    client = _client(request)
    require_scope(client, ApiScope.INTAKE)
    item = _item_for(client, item_id)
    updated = services.replace_evidence(
        item_id=item.pk, actor=client.user, payload=body.payload, subject=body.subject
    )
    updated.queue = item.queue
    return _item_out(updated, client)


@api.get(
    "/items/{item_id}",
    response=_responses({200: ItemOut}, 403, 404),
    tags=["items"],
    summary="An item's state, standing outcome and decisions",
)
def get_item(request: HttpRequest, item_id: ItemId) -> dict[str, Any]:
    """Return state, standing outcome, decisions in order (with supersedes) and applied status."""
    client = _client(request)
    if not (client.can_intake or client.can_adjudicate):
        raise errors.NotPermitted("This API client has no scope.")
    return _item_out(_item_for(client, item_id), client)


# -- adjudication -------------------------------------------------------------------------------


@api.post(
    "/queues/{slug}/leases",
    response=_responses({200: LeaseOut}, 403, 404, 413),
    tags=["adjudication"],
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
    client = _client(request)
    require_scope(client, ApiScope.ADJUDICATE)
    queue = _queue_for(client, slug)
    items = services.claim_batch(
        queue=queue,
        worker=client.user,
        n=body.batch_size,
        ttl=timedelta(seconds=body.lease_seconds),
    )
    return {
        "queue": queue.slug,
        "lease_seconds": body.lease_seconds,
        "items": [
            {
                "id": item.pk,
                "subject": item.subject,
                "priority": item.priority,
                "payload": item.payload,
                "evidence_hash": evidence_hash(subject=item.subject, payload=item.payload),
                "trace_id": item.trace_id,
                "lease_token": item.lease_token,
                "lease_expires": item.lease_expires,
                "lease_count": item.lease_count,
            }
            for item in items
        ],
    }


@api.post(
    "/items/{item_id}/decision",
    response=_responses({200: DecisionOut, 201: DecisionOut}, 403, 404, 409, 413),
    tags=["adjudication"],
    summary="Decide a leased item (fenced by its lease token and evidence hash)",
)
@decorate_view(limit_body)
def decide(request: HttpRequest, item_id: ItemId, body: DecisionIn) -> Status[dict[str, Any]]:
    """Record a verdict: 201 new; 200 for a retry of a completion that already succeeded.

    409 stale_lease or evidence_changed; 422 invalid_reason for a reason outside the closed set.
    """
    client = _client(request)
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
        )
    except errors.StaleLease:
        item = _item_for(client, item_id)
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
        return Status(200, _decision_out(_reload(earlier)))
    except errors.InvalidReason as exc:
        item = _item_for(client, item_id)
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
    return Status(201, _decision_out(decision, fresh_from=(body.reason_code, client.user)))


def _reload(decision: Decision) -> Decision:
    return Decision.objects.select_related("reason_code", "reviewer", "applied", "effect_job").get(
        pk=decision.pk
    )


@api.post(
    "/items/{item_id}/release",
    response=_responses({200: ReleaseOut}, 403, 404, 409, 413),
    tags=["adjudication"],
    summary="Give a leased item back to its queue",
)
@decorate_view(limit_body)
def release(request: HttpRequest, item_id: ItemId, body: ReleaseIn) -> dict[str, Any]:
    """Release the lease (fenced by its token); 409 stale_lease if it is no longer yours."""
    client = _client(request)
    require_scope(client, ApiScope.ADJUDICATE)
    try:
        services.release_lease(item_id=item_id, reviewer=client.user, lease_token=body.lease_token)
    except errors.StaleLease:
        _item_for(client, item_id)  # 404 for an item the client cannot see, else 409
        raise
    return {"id": item_id, "state": ItemState.PENDING}
