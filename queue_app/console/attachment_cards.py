"""What the item page shows of an item's attachments: one card per file, in name order."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest
from django.urls import reverse

from queue_app.evidence import attachments_of
from queue_app.evidence_files import IMAGE_TYPES
from queue_app.models import ReviewItem

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
    # Shown blurred and in greyscale until revealed (images of a sensitive queue).
    veiled: bool

    @property
    def anchor(self) -> str:
        return f"attachment-{self.sha256[:12]}"

    @property
    def kind(self) -> str:
        return "PDF document" if self.content_type == "application/pdf" else "image"


def revealed_in_session(request: HttpRequest, item_id: int) -> set[str]:
    """Return the digests this session revealed on the item (pages without JavaScript)."""
    return set(request.session.get(REVEALED_SESSION_KEY, {}).get(str(item_id), []))


def attachment_cards(request: HttpRequest, item: ReviewItem) -> list[AttachmentCard]:
    """Return the item's attachments as the page shows them."""
    entries = attachments_of(item.attachments)
    if not entries:
        return []
    revealed = revealed_in_session(request, item.pk) if item.queue.sensitive else set()
    cards = []
    for name, entry in sorted(entries.items()):
        sha256 = entry["sha256"]
        is_image = entry["content_type"] in IMAGE_TYPES
        args = {"item_id": item.pk, "sha256": sha256}
        cards.append(
            AttachmentCard(
                name=name,
                sha256=sha256,
                content_type=entry["content_type"],
                size=int(entry.get("size", 0)),
                url=reverse("item-attachment", kwargs=args),
                reveal_url=reverse("item-attachment-reveal", kwargs=args),
                is_image=is_image,
                veiled=is_image and item.queue.sensitive and sha256 not in revealed,
            )
        )
    return cards
