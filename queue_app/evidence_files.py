"""Evidence files: what upstream may attach, made safe on the way in, kept content-addressed.

The type is judged by the bytes (puremagic reads the signature), never by the name or the
Content-Type a sender declares: a script renamed photo.jpg is refused. Images are decoded by
Pillow under a pixel bound (a decompression bomb is refused before it is decoded) and encoded
again, which drops EXIF (GPS position, camera serial), XMP, comments and anything appended after
the image data; JPEG orientation is applied to the pixels first so the picture still stands the
right way. PDFs are kept as sent (no well-kept pure-Python rewriter); they are only ever served
as downloads, never rendered in the console's origin.

Stored under their sha256 (ab/abcdef…) in the attachments storage (settings.STORAGES, alias
REVIEW_ATTACHMENT_STORAGE): the same bytes are kept once, a name's new content is a new object,
and the digest on the item row says which bytes a decision was made over.
"""

from __future__ import annotations

import hashlib
import io
import re
import warnings
from dataclasses import dataclass
from typing import Any

import puremagic
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from PIL import Image, ImageOps

from queue_app.errors import AttachmentTooLarge, UnsupportedAttachment

IMAGE_TYPES = {"image/jpeg": "JPEG", "image/png": "PNG", "image/webp": "WEBP"}
PDF = "application/pdf"
ALLOWED_TYPES = (*IMAGE_TYPES, PDF)
EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp", PDF: "pdf"}

# A name is a label upstream chooses ("id-front", "selfie.jpg"): letters, digits, dot, dash and
# underscore, starting with a letter or digit. It never becomes a path (storage goes by digest).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
NAME_RULE = (
    "1 to 100 characters: letters, digits, '.', '-' and '_', starting with a letter or digit"
)


@dataclass(frozen=True)
class CleanFile:
    """An accepted attachment: the bytes to store and what the item row records of them."""

    content: bytes
    content_type: str
    sha256: str

    @property
    def entry(self) -> dict[str, object]:
        """Return the item row's entry for this file (covered by the evidence hash)."""
        return {"sha256": self.sha256, "content_type": self.content_type, "size": len(self.content)}


# The extensions a file of each type may keep from its name; any other is not the file's.
NAME_EXTENSIONS = {
    "image/jpeg": ("jpg", "jpeg"),
    "image/png": ("png",),
    "image/webp": ("webp",),
    PDF: ("pdf",),
}


def download_name(name: str, content_type: str) -> str:
    """Return the name a file downloads under: its extension is the one its type has.

    The type was read from the bytes; the name is upstream's label. A PDF named statement.html
    would open as a web page on the reviewer's machine, so it goes as statement.html.pdf.
    """
    _stem, dot, extension = name.rpartition(".")
    if dot and extension.lower() in NAME_EXTENSIONS[content_type]:
        return name
    return f"{name}.{EXTENSIONS[content_type]}"


def valid_name(name: str) -> bool:
    """Return whether an attachment name follows NAME_RULE."""
    return bool(NAME_PATTERN.fullmatch(name))


def sniff(data: bytes) -> str:
    """Return the MIME type the content says it is, or raise UnsupportedAttachment."""
    if not data:
        raise UnsupportedAttachment("The attachment is empty.")
    try:
        matches = puremagic.magic_string(data)
    except (puremagic.PureError, ValueError):
        matches = []
    if not matches or matches[0].mime_type not in ALLOWED_TYPES:
        raise UnsupportedAttachment()
    return str(matches[0].mime_type)


def clean(data: bytes) -> CleanFile:
    """Check the content's type and make it safe to keep: images re-encoded without metadata."""
    if len(data) > settings.REVIEW_ATTACHMENT_MAX_BYTES:
        raise AttachmentTooLarge(
            f"The attachment is {len(data)} bytes; the limit is "
            f"{settings.REVIEW_ATTACHMENT_MAX_BYTES} bytes per file.",
            limit_bytes=settings.REVIEW_ATTACHMENT_MAX_BYTES,
        )
    content_type = sniff(data)
    if content_type in IMAGE_TYPES:
        data = _reencoded(data, IMAGE_TYPES[content_type])
    return CleanFile(
        content=data, content_type=content_type, sha256=hashlib.sha256(data).hexdigest()
    )


def _reencoded(data: bytes, pil_format: str) -> bytes:
    """Decode an image under the pixel bound and encode it again, keeping only its pixels."""
    max_pixels = settings.REVIEW_ATTACHMENT_MAX_PIXELS
    try:
        with warnings.catch_warnings():
            # Pillow warns between its bound and twice it; here any excess is a refusal.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=[pil_format]) as opened:
                width, height = opened.size
                if width * height > max_pixels:
                    raise UnsupportedAttachment(
                        f"The image is {width}x{height} pixels; the limit is {max_pixels} pixels."
                    )
                opened.load()
                image = ImageOps.exif_transpose(opened)
    except UnsupportedAttachment:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise UnsupportedAttachment(
            f"The image decodes to more than {max_pixels} pixels."
        ) from None
    except Exception:
        raise UnsupportedAttachment("The image could not be read; it may be damaged.") from None
    # Some encoders fall back to image.info (PNG's ICC profile, for one): keep nothing from it
    # but a palette image's transparency, which is pixels rather than metadata.
    image.info = {k: v for k, v in image.info.items() if k == "transparency"}
    if pil_format == "JPEG" and image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    out = io.BytesIO()
    # No exif=, icc_profile= or pnginfo=: Pillow writes none of the source's metadata.
    options: dict[str, Any] = {"JPEG": {"quality": 90}, "WEBP": {"quality": 90}}.get(pil_format, {})
    image.save(out, format=pil_format, **options)
    return out.getvalue()


def storage() -> Storage:
    """Return the storage attachments are kept in."""
    return storages[settings.REVIEW_ATTACHMENT_STORAGE]


def blob_path(sha256: str) -> str:
    """Return where the bytes with this digest live in the storage."""
    return f"{sha256[:2]}/{sha256}"


def keep(file: CleanFile) -> None:
    """Store the bytes under their digest, once (the same content is the same object)."""
    path = blob_path(file.sha256)
    target = storage()
    if not target.exists(path):
        saved = target.save(path, ContentFile(file.content))
        if saved != path:
            # A concurrent writer stored the same digest first and ours got a suffix: the
            # bytes are identical, keep one.
            target.delete(saved)
