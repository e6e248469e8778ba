"""PDF attachments read page by page: each page rendered on the server to a bounded PNG.

No PDF code runs in the reviewer's browser (no pdf.js, no <embed> of the document): PDFium
(pypdfium2) opens the stored bytes here, and the console shows each page as a picture. What a
page may cost is bounded before it is drawn: at most REVIEW_PDF_MAX_PAGES pages are offered,
a page's bitmap is at most REVIEW_PDF_MAX_PIXELS (the scale is lowered to fit, so a document
with a 200-inch page draws small rather than huge), and the scale a page asks for is one of a
few steps. A document PDFium cannot open (damaged, or locked with a password) is answered with
words, and its download stays offered.

PDFium never runs in the web worker: each count and each page is drawn by a program of its own
(queue_app/pdf_worker.py) with at most REVIEW_PDF_RENDER_SECONDS and REVIEW_PDF_RENDER_MEMORY_MB.
A document built to make PDFium loop, swell or crash costs that process alone, which is killed
or dies, and the answer is words; that answer is kept like a drawn page, so asking again does
not burn another REVIEW_PDF_RENDER_SECONDS.

Pages and page counts are kept in a cache folder by the document's sha256, the page and the
scale: the bytes a digest names never change, so nothing there is ever stale, and processes
share it. One drawing at a time per web process: a reviewer paging fast queues, the machine's
other work does not.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings

from queue_app import evidence_files, pdf_worker

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
TOO_SLOW = "This PDF took too long to draw here, so its pages cannot be shown: download it."

_WORKER = Path(pdf_worker.__file__)
logger = logging.getLogger(__name__)
_DRAWING = threading.Lock()


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


def _in_worker(data: bytes, *args: object) -> bytes:
    """Run queue_app/pdf_worker.py on the document; return what it wrote, or raise
    PageUnavailable with the words for why not."""
    command = [sys.executable, "-I", str(_WORKER), *map(str, args)]
    with _DRAWING:
        try:
            done = subprocess.run(
                command,
                input=data,
                capture_output=True,
                timeout=settings.REVIEW_PDF_RENDER_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            logger.warning(
                "pdf page took too long to draw",
                extra={"seconds": settings.REVIEW_PDF_RENDER_SECONDS},
            )
            raise PageUnavailable(TOO_SLOW) from None
    if done.returncode == pdf_worker.LOCKED:
        raise PageUnavailable(LOCKED)
    if done.returncode == pdf_worker.DAMAGED:
        raise PageUnavailable(DAMAGED)
    if done.returncode != 0:
        # Out of memory, a signal, a bug: the operator reads why, the reviewer reads words.
        tail = done.stderr[-800:].decode(errors="replace")
        logger.warning(
            "pdf drawing process failed", extra={"status": done.returncode, "stderr": tail}
        )
        raise PageUnavailable(UNREADABLE)
    return done.stdout


def outline(sha256: str) -> PdfOutline:
    """Return how many pages of the stored PDF the console shows, or why it shows none."""
    name = f"{sha256}.json"
    known = _cached(name)
    if known is not None:
        try:
            return PdfOutline(**json.loads(known))
        except (ValueError, TypeError):
            pass  # a cache file from another version: count again
    memory = settings.REVIEW_PDF_RENDER_MEMORY_MB
    try:
        counted = json.loads(_in_worker(_read_blob(sha256), "count", memory))
    except PageUnavailable as refused:
        found = PdfOutline(total=0, shown=0, problem=refused.message)
    except ValueError:
        found = PdfOutline(total=0, shown=0, problem=UNREADABLE)
    else:
        total = int(counted["total"])
        shown = min(total, settings.REVIEW_PDF_MAX_PAGES)
        found = PdfOutline(total=total, shown=shown, problem="" if total else EMPTY)
    if found.problem != TOO_SLOW:  # a busy moment is not the document's nature: try again later
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
    # A page the worker could not draw is remembered like one it drew: the words, not a retry
    # (except a page that ran out of time: a busy moment is not the document's nature).
    refused = _cached(f"{name}.refused")
    if refused is not None:
        raise PageUnavailable(refused.decode())
    try:
        png = _in_worker(
            _read_blob(sha256),
            "render",
            page,
            scale,
            settings.REVIEW_PDF_MAX_PIXELS,
            settings.REVIEW_PDF_RENDER_MEMORY_MB,
        )
    except PageUnavailable as unavailable:
        if unavailable.message != TOO_SLOW:
            _keep(f"{name}.refused", unavailable.message.encode())
        raise
    _keep(name, png)
    return png
