"""What the item page shows of an item's attachments: one card per file, in name order."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpRequest
from django.urls import reverse

from queue_app import pdf_pages
from queue_app.evidence import attachments_of
from queue_app.evidence_files import IMAGE_TYPES, PDF
from queue_app.models import ReviewItem
from queue_app.selectors.wellness import Viewing, viewing_for

REVEALED_SESSION_KEY = "revealed_attachments"


@dataclass(frozen=True)
class AttachmentCard:
    name: str
    sha256: str
    content_type: str
    size: int
    url: str
    reveal_url: str
    is_image: bool
    # Shown blurred (and in greyscale) until revealed (images of a sensitive queue).
    veiled: bool
    # How this reviewer sees a sensitive queue's images (None on other queues).
    viewing: Viewing | None = None
    # A PDF's pages as pictures drawn on the server, or why there are none.
    page_urls: list[str] = field(default_factory=list)
    pages_total: int = 0
    pdf_problem: str = ""

    @property
    def anchor(self) -> str:
        return f"attachment-{self.sha256[:12]}"

    @property
    def kind(self) -> str:
        return "PDF document" if self.content_type == PDF else "image"

    @property
    def is_pdf(self) -> bool:
        return self.content_type == PDF


def revealed_in_session(request: HttpRequest, item_id: int) -> set[str]:
    """Return the digests this session revealed on the item (pages without JavaScript)."""
    return set(request.session.get(REVEALED_SESSION_KEY, {}).get(str(item_id), []))


def _pdf_pages(item_id: int, sha256: str) -> tuple[list[str], int, str]:
    """Return the URLs of a PDF's shown pages, its page count, and why none, if none."""
    try:
        outline = pdf_pages.outline(sha256)
    except OSError:
        # The blob is missing or the storage is down: the page still opens, the download link
        # says the rest (it answers for itself).
        return [], 0, pdf_pages.UNREADABLE
    if outline.problem:
        return [], outline.total, outline.problem
    urls = [
        reverse("item-attachment-page", kwargs={"item_id": item_id, "sha256": sha256, "page": n})
        for n in range(1, outline.shown + 1)
    ]
    return urls, outline.total, ""


def attachment_cards(request: HttpRequest, item: ReviewItem) -> list[AttachmentCard]:
    """Return the item's attachments as the page shows them."""
    entries = attachments_of(item.attachments)
    if not entries:
        return []
    sensitive = item.queue.sensitive
    revealed = revealed_in_session(request, item.pk) if sensitive else set()
    viewing = viewing_for(user_id=request.user.pk, queue=item.queue) if sensitive else None
    cards = []
    for name, entry in sorted(entries.items()):
        sha256 = entry["sha256"]
        is_image = entry["content_type"] in IMAGE_TYPES
        args = {"item_id": item.pk, "sha256": sha256}
        page_urls: list[str] = []
        pages_total, pdf_problem = 0, ""
        if entry["content_type"] == PDF:
            page_urls, pages_total, pdf_problem = _pdf_pages(item.pk, sha256)
        cards.append(
            AttachmentCard(
                name=name,
                sha256=sha256,
                content_type=entry["content_type"],
                size=int(entry.get("size", 0)),
                url=reverse("item-attachment", kwargs=args),
                reveal_url=reverse("item-attachment-reveal", kwargs=args),
                is_image=is_image,
                veiled=is_image and sensitive and sha256 not in revealed,
                viewing=viewing,
                page_urls=page_urls,
                pages_total=pages_total,
                pdf_problem=pdf_problem,
            )
        )
    return cards
