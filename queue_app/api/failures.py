"""Every way an API request can fail, answered in one JSON shape:

    {"error": {"code": "stale_lease", "message": "words for a person", "details": ...}}

Queue operation errors (queue_app.errors) map to a status and a stable code; django-ninja's own
failures (validation, authentication, unparsable bodies, 404) and the unexpected are rewritten
into the same shape, and nothing reaches a client as a traceback.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from queue_app import errors
from queue_app.api.schemas import MAX_BODY_BYTES, ErrorOut
from queue_app.api.wire import MEDIA_TYPE
from queue_app.jsonutil import exact_dumps

logger = logging.getLogger("queue_app.api")


class ApiProblem(Exception):
    """A request the API refuses for a reason of its own (not a queue operation's error)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details


def error_response(
    request: HttpRequest, status: int, code: str, message: str, details: Any = None
) -> HttpResponse:
    """Return the one error shape every failure of the API leaves as."""
    body = {"error": {"code": code, "message": message, "details": details}}
    return HttpResponse(
        exact_dumps(body), status=status, content_type=f"{MEDIA_TYPE}; charset=utf-8"
    )


def responses(success: dict[int, Any], *failures: int) -> dict[int, Any]:
    """Declare an operation's success schemas and the error statuses it can answer with."""
    return {**success, **dict.fromkeys((400, 401, 422, 503, *failures), ErrorOut)}


# What every operation's 422 means; an operation's own refusals are added by refusals().
INVALID = (
    "a field is missing, has the wrong JSON type (an integer field takes a JSON integer only: "
    'not true, "5" or 5.0), lies outside its documented bounds, or holds NUL characters or '
    "lone surrogates (text fields and payload strings and keys alike); payload numbers and "
    "numeric strings may have at most 1000 digits either side of the point, and payloads nest "
    "at most 32 levels. `details` names each field."
)


def refusals(**codes: str) -> dict[str, Any]:
    """Return an operation's openapi_extra describing its 422 answers, code by code."""
    lines = [f"- `invalid`: {INVALID}"] + [f"- `{code}`: {why}" for code, why in codes.items()]
    description = "Refused; `error.code` says why:\n\n" + "\n".join(lines)
    # An int key, as django-ninja keys its own responses: a "422" would be a second entry.
    return {"responses": {422: {"description": description}}}


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
    (errors.InvalidDeadline, 422, "invalid_deadline"),
    (errors.InvalidSuggestion, 422, "invalid_suggestion"),
    (errors.InvalidHoldReason, 422, "invalid_hold_reason"),
    (errors.InvalidHoldTime, 422, "invalid_hold_time"),
    (errors.NotPermitted, 403, "forbidden"),
    (errors.ItemNotFound, 404, "not_found"),
    (errors.UnsupportedAttachment, 415, "unsupported_media_type"),
    (errors.AttachmentTooLarge, 413, "payload_too_large"),
    (errors.ReviewError, 400, "bad_request"),
]

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


def _review_error(request: HttpRequest, exc: errors.ReviewError) -> HttpResponse:
    if isinstance(exc, errors.AppealRefused):  # its own status and code, naming the field
        named = [{"field": exc.field, "type": exc.code, "message": exc.message}]
        return error_response(request, exc.status, exc.code, exc.message, named)
    status, code = next((s, c) for cls, s, c in _REVIEW_ERRORS if isinstance(exc, cls))
    # The code stays stable; a refused fence says what happened in details (released, taken…).
    details: Any = {"what": exc.what} if isinstance(exc, errors.StaleLease) else None
    if isinstance(exc, errors.InvalidSuggestion):
        details = [{"field": exc.field, "type": code, "message": exc.message}]
    if isinstance(exc, errors.AttachmentTooLarge) and exc.limit_bytes:
        details = {"limit_bytes": exc.limit_bytes}
    return error_response(request, status, code, exc.message, details)


def _api_problem(request: HttpRequest, exc: ApiProblem) -> HttpResponse:
    return error_response(request, exc.status, exc.code, exc.message, exc.details)


def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    problems = []
    for error in exc.errors:
        # loc is (source, name...) and, for a body, (source, body param, field...): a person
        # wants the field path ("batch_size", "payload", "item_id").
        source, *path = error.get("loc", ("body",))
        if source == "body" and len(path) > 1:
            path = path[1:]
        field = ".".join(str(part) for part in path) or str(source)
        # Only plain fields: pydantic's ctx and input can hold values JSON cannot carry.
        problems.append({"field": field, "type": error.get("type"), "message": error.get("msg")})
    message = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    return error_response(request, 422, "invalid", f"Invalid request: {message}", problems)


def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error_response(
        request,
        401,
        "unauthorized",
        "Send a valid, unrevoked API token as 'Authorization: Bearer <token>'.",
    )
    response["WWW-Authenticate"] = 'Bearer realm="review-console"'
    return response


def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    message = exc.message
    if exc.status_code == 400 and message.startswith("Cannot parse request body"):
        message = "The request body is not valid JSON."
    code = _HTTP_CODES.get(exc.status_code, "error")
    return error_response(request, exc.status_code, code, message)


def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, 404, "not_found", "Not found.")


def _database_error(request: HttpRequest, exc: OperationalError) -> HttpResponse:
    # Lock and statement timeouts (set on every claim and fenced write) mean "busy", not
    # "broken": the client should retry shortly. Anything else is an outage.
    sqlstate = getattr(exc.__cause__, "sqlstate", None)
    if sqlstate in ("55P03", "57014"):
        response = error_response(request, 503, "busy", "The database is busy; retry in a moment.")
        response["Retry-After"] = "1"
        return response
    logger.exception("database error in API request", extra={"path": request.path})
    return error_response(request, 503, "unavailable", "The database is unavailable.")


def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("unexpected error in API request", extra={"path": request.path})
    return error_response(
        request, 500, "internal_error", "Something went wrong on our side; it has been logged."
    )


def install_error_handlers(api: NinjaAPI) -> None:
    """Answer every failure of the API in the one error shape."""
    # ninja's hint has a handler take the exception or its class; it is given the exception.
    handlers: list[tuple[type[Exception], Callable[[HttpRequest, Any], HttpResponse]]] = [
        (errors.ReviewError, _review_error),
        (ApiProblem, _api_problem),
        (ValidationError, _validation_error),
        (AuthenticationError, _unauthenticated),
        (HttpError, _http_error),
        (Http404, _not_found),
        (OperationalError, _database_error),
        (Exception, _unexpected),
    ]
    for exc_class, handler in handlers:
        api.add_exception_handler(exc_class, handler)


def limit_body(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Refuse a body over MAX_BODY_BYTES with 413, judged before the body is read or parsed."""

    @functools.wraps(run)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Django reads exactly CONTENT_LENGTH bytes of a body (none without it), so the
        # declared length is the size that would be read.
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
