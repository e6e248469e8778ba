"""Attachments on the item page: served to those who may see the item, revealed one at a time.

Files are never at a public URL: each request passes the same access rule as the item page
(the reviewer may review the item's queue), and the URL names the bytes by digest, so a
response can be cached privately for good (a replaced file has a new URL). Images are served
inline; PDFs as downloads only, so no document is ever rendered in the console's origin.
"""

from __future__ import annotations

from urllib.parse import quote

from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from queue_app.attachments import EXTENSIONS, IMAGE_TYPES
from queue_app.console.attachment_cards import REVEALED_SESSION_KEY
from queue_app.console.views import Refusal, _item_for, console_view, post_only
from queue_app.services import attachment_by_digest, open_attachment, record_reveal

NO_SUCH_ATTACHMENT = "This item has no such attachment (it may have been replaced)."
# Pages without JavaScript remember reveals in the session, for this many items at most.
REVEALED_ITEMS_KEPT = 50


@require_GET
@console_view
def attachment_file(request: HttpRequest, item_id: int, sha256: str) -> HttpResponse:
    """Send an attachment's bytes to someone who may see the item."""
    item = _item_for(request, item_id)
    found = attachment_by_digest(item=item, sha256=sha256)
    if found is None:
        raise Refusal(404, NO_SUCH_ATTACHMENT)
    name, entry = found
    content_type = entry["content_type"]
    filename = name if "." in name else f"{name}.{EXTENSIONS[content_type]}"
    disposition = "inline" if content_type in IMAGE_TYPES else "attachment"
    response = FileResponse(open_attachment(sha256=sha256), content_type=content_type)
    response["Content-Disposition"] = f"{disposition}; filename*=UTF-8''{quote(filename)}"
    response["X-Content-Type-Options"] = "nosniff"
    # Only this browser may keep it (private), and the URL names the bytes: no revalidation.
    response["Cache-Control"] = "private, max-age=86400, immutable"
    # Opened on its own (a new tab), the file is a document of its own: it may do nothing.
    response["Content-Security-Policy"] = "default-src 'none'; img-src 'self'; sandbox"
    return response


@post_only
@console_view
def attachment_reveal(request: HttpRequest, item_id: int, sha256: str) -> HttpResponse:
    """Record that I revealed a blurred image; JSON for the page's script, else back to the item."""
    item = _item_for(request, item_id)
    found = attachment_by_digest(item=item, sha256=sha256)
    if found is None:
        raise Refusal(404, NO_SUCH_ATTACHMENT)
    name, _entry = found
    record_reveal(item=item, user=request.user, name=name, sha256=sha256)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"ok": True, "name": name})
    revealed = request.session.get(REVEALED_SESSION_KEY, {})
    shown = sorted({*revealed.pop(str(item.pk), []), sha256})
    # The most recent items only (dicts keep insertion order): a session stays small.
    kept = list(revealed.items())[-(REVEALED_ITEMS_KEPT - 1) :]
    request.session[REVEALED_SESSION_KEY] = {**dict(kept), str(item.pk): shown}
    return redirect(reverse("item", kwargs={"item_id": item.pk}) + f"#attachment-{sha256[:12]}")
