"""Attachment endpoint: upstream puts evidence files (images, PDFs) on an open item."""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Path, Router

from queue_app import services
from queue_app.api.auth import client_of, require_scope, visible_item
from queue_app.api.failures import ApiProblem, refusals, responses
from queue_app.api.payloads import item_out
from queue_app.api.schemas import ItemId, ItemOut
from queue_app.evidence_files import NAME_PATTERN, NAME_RULE
from queue_app.models import ApiScope

router = Router(tags=["intake"])

#: The name's rule, in the OpenAPI schema as a pattern; the service checks the same pattern
#: for every other caller. A "/" never reaches here: it is another path (a JSON 404).
AttachmentName = Annotated[
    str,
    Path(pattern=NAME_PATTERN.pattern, description=f"The file's label: {NAME_RULE}."),
]

READ_CHUNK = 64 * 1024


@router.put(
    "/items/{item_id}/attachments/{name}",
    response=responses({200: ItemOut}, 403, 404, 409, 413, 415),
    openapi_extra={
        **refusals(out_of_range=f"the name is not {NAME_RULE}."),
        "requestBody": {
            "required": True,
            "description": (
                "The file's bytes as the body (any Content-Type: the type is read from the "
                "content). JPEG, PNG, WebP or PDF; images are re-encoded without metadata."
            ),
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        },
    },
    summary="Attach or replace a file (image or PDF) on a pending or leased item",
)
def put_attachment(request: HttpRequest, item_id: ItemId, name: AttachmentName) -> dict[str, Any]:
    """Store the body under name; a holder's later submit gets evidence_changed.

    Refused with 409 already_decided once the item is decided, 415 for anything that is not a
    JPEG, PNG, WebP or PDF by its content, 413 over the per-file or per-item limit.
    """
    client = client_of(request)
    require_scope(client, ApiScope.INTAKE)
    item = visible_item(client, item_id)
    data = _read_body(request)
    updated = services.put_attachment(item_id=item.pk, actor=client.user, name=name, data=data)
    updated.queue = item.queue
    return item_out(updated, client)


def _read_body(request: HttpRequest) -> bytes:
    """Read the body, refusing one over the per-file limit before reading more than that."""
    limit = settings.REVIEW_ATTACHMENT_MAX_BYTES
    # Django reads exactly CONTENT_LENGTH bytes of a body (none without it): the declared
    # length is the size that would be read, so it is judged before anything is.
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise ApiProblem(
            413,
            "payload_too_large",
            f"The attachment is {declared} bytes; the limit is {limit} bytes per file.",
            {"limit_bytes": limit},
        )
    # Read from the stream rather than request.body, whose own bound
    # (DATA_UPLOAD_MAX_MEMORY_SIZE) is for forms, not files; Django's stream stops at
    # Content-Length.
    chunks: list[bytes] = []
    while chunk := request.read(READ_CHUNK):
        chunks.append(chunk)
    return b"".join(chunks)
