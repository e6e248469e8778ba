"""The process that opens an untrusted PDF: PDFium runs here, never in a web worker.

queue_app/pdf_pages.py starts this file as a program of its own for each count or page it
does not have cached, feeds it the document on stdin and waits at most
REVIEW_PDF_RENDER_SECONDS. A document built to make PDFium loop, eat memory or crash costs
this process, which is killed or dies alone, and the web worker answers with words. It
imports neither Django nor the project: nothing here can reach the database or the secrets.

    python pdf_worker.py count <memory_mb>                           -> {"total": n}
    python pdf_worker.py render <page> <scale> <max_pixels> <memory_mb> -> PNG bytes

A document PDFium refuses ends with exit status LOCKED or DAMAGED; any other failure (out of
memory, a signal) with another status, which the caller reads as "could not be read here".
"""

from __future__ import annotations

import io
import json
import math
import resource
import sys
from typing import Any

LOCKED, DAMAGED = 3, 4


def _bound_memory(megabytes: int) -> None:
    # The address space, not the resident set: PDFium allocating a huge bitmap fails here
    # (MemoryError or a PdfiumError) rather than pushing the machine into swap.
    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _open(data: bytes) -> Any:
    import pypdfium2 as pdfium  # type: ignore[import-untyped]  # no stubs, no py.typed

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        # PDFium's last error can outlive a failure of another kind: a document is called
        # locked only when it also names an encryption dictionary.
        locked = "password" in str(exc).lower() and b"/Encrypt" in data
        sys.exit(LOCKED if locked else DAMAGED)


def count(data: bytes) -> bytes:
    document = _open(data)
    try:
        return json.dumps({"total": len(document)}).encode()
    finally:
        document.close()


def render(data: bytes, page: int, scale: float, max_pixels: int) -> bytes:
    import pypdfium2 as pdfium

    document = _open(data)
    try:
        pdf_page = document[page - 1]
        try:
            width, height = pdf_page.get_size()
            pixels = width * height * scale * scale
            if pixels > max_pixels:
                scale *= math.sqrt(max_pixels / pixels)
            bitmap = pdf_page.render(scale=max(scale, 0.01), may_draw_forms=True)
            picture = bitmap.to_pil()
        finally:
            pdf_page.close()
    except (pdfium.PdfiumError, ValueError, OSError):
        sys.exit(DAMAGED)
    finally:
        document.close()
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=False)
    return out.getvalue()


def main(argv: list[str]) -> None:
    data = sys.stdin.buffer.read()
    if argv[0] == "count":
        _bound_memory(int(argv[1]))
        answer = count(data)
    else:
        _bound_memory(int(argv[4]))
        answer = render(data, int(argv[1]), float(argv[2]), int(argv[3]))
    sys.stdout.buffer.write(answer)


if __name__ == "__main__":
    main(sys.argv[1:])
