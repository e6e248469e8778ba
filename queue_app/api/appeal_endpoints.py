"""Appeals (DSA Article 20): the platform forwards the affected person's complaint, and follows it.

`POST /appeals` files a complaint against a decision (named by its id or by its statement's
PUID) under the platform's own reference: the same reference with the same body answers the
same appeal (200), with another body a 409. Needs the intake scope and the decision's queue.
`GET /appeals/{id}` says where it is and, once decided, its outcome.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Router, Schema, Status
from ninja.decorators import decorate_view
from pydantic import ConfigDict, Field

from queue_app.api.auth import client_of, require_scope
from queue_app.api.failures import limit_body, refusals, responses
from queue_app.api.schemas import ITEM_ID, ItemId, bounded_int
from queue_app.api.schemas import text as bounded_text
from queue_app.errors import ItemNotFound
from queue_app.models import ApiScope
from queue_app.models.appeals import (
    APPEAL_ATTACHMENTS_MAX,
    APPEAL_REFERENCE_MAX_LENGTH,
    APPEAL_TEXT_MAX_LENGTH,
)
from queue_app.services import appeals

router = Router(tags=["appeals"])

Sha256 = Annotated[str, bounded_text(64, 64, "[0-9a-f]{64}")]


class AppealAttachmentIn(Schema):
    """A file of the complainant's, kept at the platform: its metadata and where it is."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, bounded_text(1, 255)]
    content_type: Annotated[
        str, bounded_text(1, 100, r"[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+")
    ]
    size: Annotated[int, bounded_int(0, 2**40)]
    sha256: Sha256
    url: Annotated[str, bounded_text(1, 2000, r"https://\S+")] | None = None


class AppealIn(Schema):
    """A complaint: the decision (or its statement), the person's text, the platform's key."""

    model_config = ConfigDict(extra="forbid")

    reference: Annotated[str, bounded_text(1, APPEAL_REFERENCE_MAX_LENGTH)] = Field(
        description="The platform's reference: one appeal per client and reference."
    )
    decision: Annotated[int, bounded_int(*ITEM_ID)] | None = Field(
        None, description="The id of the decision appealed (or give `statement`)."
    )
    statement: Annotated[str, bounded_text(1, 500)] | None = Field(
        None, description="The PUID of the decision's statement of reasons (or give `decision`)."
    )
    text: Annotated[str, bounded_text(1, APPEAL_TEXT_MAX_LENGTH)] = Field(
        description="The affected person's complaint, in their words."
    )
    attachments: list[AppealAttachmentIn] = Field(
        default_factory=list, max_length=APPEAL_ATTACHMENTS_MAX
    )


class AppealOut(Schema):
    id: int
    reference: str
    decision_id: int
    statement_puid: str | None
    received_at: datetime
    due_at: datetime
    window_ends_at: datetime
    status: str = Field(
        description="pending, upheld, reversed or closed; reversal_returned when the "
        "reversal's overturn was returned by its checker (not final: the decision stands)."
    )
    decided_at: datetime | None
    overturn_id: int | None = Field(description="A reversal's overturn decision.")
    corrected_verdict: str | None
    reasons: str | None
    notice: str | None = Field(
        description="The outcome notice: waiting, done or dead; held while a returned "
        "reversal is not final."
    )


@router.post(
    "/appeals",
    response=responses({200: AppealOut, 201: AppealOut}, 403, 409, 413),
    openapi_extra=refusals(
        unknown_decision="no decision with the id in `decision` in a queue this client is granted.",
        unknown_statement="no statement with the PUID in `statement` in a queue this client "
        "is granted.",
        appeal_window_closed="the queue's window to appeal the decision (six months after its "
        "statement unless the policy says longer) has closed; nothing was written.",
    ),
    summary="File the affected person's appeal against a decision (idempotent per reference)",
)
@decorate_view(limit_body)
def create_appeal(request: HttpRequest, body: AppealIn) -> Status[dict[str, Any]]:
    """File an appeal; the same reference with the same body returns the same appeal (200).

    The same reference with another body is a 409 `idempotency_conflict`; a decision that is
    not final and in force, or that was appealed already, a 409 `not_appealable` or
    `already_appealed`. Nothing is written on any refusal.
    """
    client = client_of(request)
    require_scope(client, ApiScope.INTAKE)
    appeal, created = appeals.file_appeal(
        client=client,
        request=appeals.AppealRequest(
            reference=body.reference,
            text=body.text,
            decision_id=body.decision,
            statement_puid=body.statement,
            attachments=tuple(a.model_dump(exclude_none=True) for a in body.attachments),
        ),
    )
    return Status(201 if created else 200, appeals.appeal_status(appeal))


@router.get(
    "/appeals/{appeal_id}",
    response=responses({200: AppealOut}, 403, 404),
    openapi_extra=refusals(),
    summary="An appeal's status and, once decided, its outcome",
)
def get_appeal(request: HttpRequest, appeal_id: ItemId) -> dict[str, Any]:
    """Return where the appeal is: pending, or upheld, reversed or closed with the reasons."""
    client = client_of(request)
    require_scope(client, ApiScope.INTAKE)
    appeal = appeals.appeal_for_client(client=client, appeal_id=appeal_id)
    if appeal is None:
        raise ItemNotFound("No such appeal in a queue this client is granted.")
    return appeals.appeal_status(appeal)
