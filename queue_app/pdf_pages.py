"""PDF attachments read page by page: each page rendered on the server to a bounded PNG.

No PDF code runs in the reviewer's browser (no pdf.js, no <embed> of the document): PDFium
(pypdfium2) opens the stored bytes here, and the console shows each page as a picture. What a
page may cost is bounded before it is drawn: at most REVIEW_PDF_MAX_PAGES pages are offered,
a page's bitmap is at most REVIEW_PDF_MAX_PIXELS (the scale is lowered to fit, so a document
with a 200-inch page draws small rather than huge), and the scale a page asks for is one of a
few steps. A document PDFium cannot open (damaged, or locked with a password) is answered with
words, and its download stays offered.

Pages and page counts are kept in a cache folder by the document's sha256, the page and the
scale: the bytes a digest names never change, so nothing there is ever stale, and processes
share it. PDFium is not thread-safe: one lock serialises it within a process.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pypdfium2 as pdfium  # type: ignore[import-untyped]  # no stubs, no py.typed
from django.conf import settings

from queue_app import evidence_files

#: The scales a page may be asked for (1 = 72 dpi); the viewer asks for more as it zooms in.
SCALES = (Decimal("1"), Decimal("1.5"), Decimal("2"), Decimal("3"))
DEFAULT_SCALE = Decimal("1.5")
SCALE_RULE = "one of 1, 1.5, 2 or 3"
_SCALE_TEXT = re.compile(r"[0-9](?:\.[0-9]{1,2})?", re.ASCII)

LOCKED = "This PDF is protected by a password, so its pages cannot be shown here: download it."
DAMAGED = (
    "This PDF could not be read (it may be damaged), so its pages cannot be shown: download it."
)
EMPTY = "This PDF has no pages to show: download it."
UNREADABLE = "This PDF could not be read here, so its pages cannot be shown: download it."

_PDFIUM = threading.Lock()


class PageUnavailable(Exception):
    """A page that cannot be shown, with words that say why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class PdfOutline:
    """What the console may show of a PDF: how many pages, or why none."""

    total: int  # pages in the document
    shown: int  # pages offered as pictures (at most REVIEW_PDF_MAX_PAGES)
    problem: str  # why no page is shown ("" when pages are shown)

    @property
    def truncated(self) -> bool:
        return self.shown < self.total


def parse_scale(raw: str | None) -> Decimal:
    """Return the scale a request names, or raise PageUnavailable if it is not one we draw."""
    if raw is None or raw == "":
        return DEFAULT_SCALE
    # ASCII digits only: Decimal alone would take " 2", "1_0", "NaN" and other scripts' digits.
    if not _SCALE_TEXT.fullmatch(raw):
        raise PageUnavailable(f"The scale must be {SCALE_RULE}.")
    scale = Decimal(raw)
    if scale not in SCALES:
        raise PageUnavailable(f"The scale must be {SCALE_RULE}.")
    # "1.50" and "1.5" are one picture: the cache and the answer use the canonical form.
    return next(s for s in SCALES if s == scale)


def _cache_dir() -> Path:
    return Path(settings.REVIEW_PDF_PAGE_CACHE_DIR)


def _cached(name: str) -> bytes | None:
    try:
        return (_cache_dir() / name).read_bytes()
    except OSError:
        return None


def _keep(name: str, data: bytes) -> None:
    """Write a cache file whole or not at all (rename is atomic): a reader never sees half."""
    folder = _cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".part-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, folder / name)
    except OSError:
        # A full or read-only disk costs a render next time, never the answer itself.
        pass


def _read_blob(sha256: str) -> bytes:
    with evidence_files.storage().open(evidence_files.blob_path(sha256), "rb") as blob:
        return bytes(blob.read())


def _open(data: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        # PDFium's last error is process-wide and can outlive a failure of another kind: a
        # document is called locked only when it also names an encryption dictionary.
        locked = "password" in str(exc).lower() and b"/Encrypt" in data
        raise PageUnavailable(LOCKED if locked else DAMAGED) from None


def outline(sha256: str) -> PdfOutline:
    """Return how many pages of the stored PDF the console shows, or why it shows none."""
    name = f"{sha256}.json"
    known = _cached(name)
    if known is not None:
        try:
            return PdfOutline(**json.loads(known))
        except (ValueError, TypeError):
            pass  # a cache file from another version: count again
    data = _read_blob(sha256)
    with _PDFIUM:
        try:
            document = _open(data)
        except PageUnavailable as refused:
            found = PdfOutline(total=0, shown=0, problem=refused.message)
        else:
            try:
                total = len(document)
            finally:
                document.close()
            shown = min(total, settings.REVIEW_PDF_MAX_PAGES)
            found = PdfOutline(total=total, shown=shown, problem="" if total else EMPTY)
    _keep(name, json.dumps(found.__dict__).encode())
    return found


def page_png(sha256: str, *, page: int, scale: Decimal) -> bytes:
    """Return page (1-based) of the stored PDF as a PNG no larger than REVIEW_PDF_MAX_PIXELS."""
    found = outline(sha256)
    if found.problem:
        raise PageUnavailable(found.problem)
    if not 1 <= page <= found.shown:
        raise PageUnavailable(
            f"This PDF has no page {page} to show here (pages 1 to {found.shown})."
        )
    name = f"{sha256}-p{page}-s{scale}.png"
    known = _cached(name)
    if known is not None:
        return known
    data = _read_blob(sha256)
    with _PDFIUM:
        document = _open(data)
        try:
            pdf_page = document[page - 1]
            try:
                width, height = pdf_page.get_size()
                drawn = float(scale)
                pixels = width * height * drawn * drawn
                limit = settings.REVIEW_PDF_MAX_PIXELS
                if pixels > limit:
                    drawn *= math.sqrt(limit / pixels)
                bitmap = pdf_page.render(scale=max(drawn, 0.01), may_draw_forms=True)
                picture = bitmap.to_pil()
            finally:
                pdf_page.close()
        except (pdfium.PdfiumError, ValueError, OSError):
            raise PageUnavailable(DAMAGED) from None
        finally:
            document.close()
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=False)
    png = out.getvalue()
    _keep(name, png)
    return png
