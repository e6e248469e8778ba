"""Attachments on the item page: served to those who may see the item, revealed one at a time.

Files are never at a public URL: each request passes the same access rule as the pages that show
them (the item page: the reviewer may review the item's queue; an adjudication page: the user
may adjudicate and the item has an adjudication), and the URL names the bytes by digest, so a
response can be cached privately for good (a replaced file has a new URL). Images are served
inline; PDFs as downloads only, so no document is ever rendered in the console's origin. A PDF's
pages are shown as pictures drawn on the server (queue_app/pdf_pages.py), under the same rule.
"""

from __future__ import annotations

from urllib.parse import quote

from django.http import (
    FileResponse,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
    JsonResponse,
)
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from queue_app import pdf_pages
from queue_app.console.attachment_cards import REVEALED_SESSION_KEY
from queue_app.console.views import NO_SUCH_ITEM, Refusal, _item_for, console_view, post_only
from queue_app.evidence_files import IMAGE_TYPES, PDF, download_name
from queue_app.models import LaneKind, LaneTask, ReviewItem
from queue_app.services import (
    attachment_by_digest,
    open_attachment,
    record_reveal,
    user_lane_kinds,
)

NO_SUCH_ATTACHMENT = "This item has no such attachment (it may have been replaced)."
# Pages without JavaScript remember reveals in the session, for this many items at most.
REVEALED_ITEMS_KEPT = 50


def _item_shown_to(request: HttpRequest, item_id: int) -> ReviewItem:
    """The item, if a page this user may open shows its attachments (else 404, one answer)."""
    try:
        return _item_for(request, item_id)
    except Refusal:
        # An adjudicator (or appeal decider) may hold no review access to the queue: those
        # pages show the item's evidence to anyone who may work the lane, and so may its files.
        kinds = [
            kind
            for kind in (LaneKind.ADJUDICATION, LaneKind.APPEAL)
            if kind in user_lane_kinds(user=request.user)
        ]
        if not (kinds and LaneTask.objects.filter(item_id=item_id, kind__in=kinds).exists()):
            raise
    item = ReviewItem.objects.select_related("queue").filter(pk=item_id).first()
    if item is None:
        raise Refusal(404, NO_SUCH_ITEM)
    return item


def _back_to(request: HttpRequest, item: ReviewItem, sha256: str) -> str:
    """The page the reveal came from (a check or QA page), if it is ours; else the item page."""
    page = request.POST.get("next", "")
    # A path on this site only: "/…", never "//host" or "/\\host", nor a relative "x" (which
    # would land under the reveal URL, and which redirect() would even try as a view name), and
    # no control characters (a newline in a Location header is a header injection).
    is_path = page.startswith("/") and not page.startswith(("//", "/\\")) and page.isprintable()
    if not (
        is_path
        and url_has_allowed_host_and_scheme(
            page, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        page = reverse("item", kwargs={"item_id": item.pk})
    return page.split("#", 1)[0] + f"#attachment-{sha256[:12]}"


def _private_file_headers(response: HttpResponseBase) -> None:
    response["X-Content-Type-Options"] = "nosniff"
    # Only this browser may keep it (private), and the URL names the bytes: no revalidation.
    response["Cache-Control"] = "private, max-age=86400, immutable"
    # Opened on its own (a new tab), the file is a document of its own: it may do nothing.
    response["Content-Security-Policy"] = "default-src 'none'; img-src 'self'; sandbox"


@require_GET
@console_view
def attachment_file(request: HttpRequest, item_id: int, sha256: str) -> HttpResponseBase:
    """Send an attachment's bytes to someone who may see the item."""
    item = _item_shown_to(request, item_id)
    found = attachment_by_digest(item=item, sha256=sha256)
    if found is None:
        raise Refusal(404, NO_SUCH_ATTACHMENT)
    name, entry = found
    content_type = entry["content_type"]
    filename = download_name(name, content_type)
    disposition = "inline" if content_type in IMAGE_TYPES else "attachment"
    response = FileResponse(open_attachment(sha256=sha256), content_type=content_type)
    response["Content-Disposition"] = f"{disposition}; filename*=UTF-8''{quote(filename)}"
    _private_file_headers(response)
    return response


@require_GET
@console_view
def attachment_page(request: HttpRequest, item_id: int, sha256: str, page: int) -> HttpResponse:
    """Send page N of a PDF attachment as a PNG drawn on the server, to someone who may see it."""
    item = _item_shown_to(request, item_id)
    found = attachment_by_digest(item=item, sha256=sha256)
    if found is None or found[1]["content_type"] != PDF:
        raise Refusal(404, NO_SUCH_ATTACHMENT)
    try:
        scale = pdf_pages.parse_scale(request.GET.get("scale"))
    except pdf_pages.PageUnavailable as refused:
        raise Refusal(400, refused.message) from None
    try:
        png = pdf_pages.page_png(sha256, page=page, scale=scale)
    except pdf_pages.PageUnavailable as refused:
        raise Refusal(404, refused.message) from None
    except OSError:
        # The stored bytes could not be read (a missing blob, the storage down): words, not a 500.
        raise Refusal(404, pdf_pages.UNREADABLE) from None
    response = HttpResponse(png, content_type="image/png")
    response["Content-Disposition"] = f"inline; filename*=UTF-8''{quote(found[0])}-page-{page}.png"
    _private_file_headers(response)
    return response


@post_only
@console_view
def attachment_reveal(request: HttpRequest, item_id: int, sha256: str) -> HttpResponse:
    """Record that I revealed a blurred image; JSON for the page's script, else back to the page."""
    item = _item_shown_to(request, item_id)
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
    return HttpResponseRedirect(_back_to(request, item, sha256))
