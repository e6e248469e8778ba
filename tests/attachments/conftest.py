"""Fixtures for attachments: real image and PDF bytes, and an item upstream attaches files to."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from queue_app.models import ReviewItem
from tests.api.conftest import Caller, caller_for, make_client
from tests.conftest import make_items

PDF_BYTES = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


def handmade_pdf(objects: list[bytes], trailer: bytes = b"") -> bytes:
    """Return a PDF of these objects (1 is the catalog), with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<</Size %d/Root 1 0 R" % (len(objects) + 1) + trailer + b">>\n"
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def pdf_bytes(pages: int = 2, size: tuple[int, int] = (200, 300)) -> bytes:
    """Return a real PDF of blank pages (each size points), drawn with a black square."""
    kids = b" ".join(b"%d 0 R" % (3 + 2 * n) for n in range(pages))
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[%s]/Count %d>>" % (kids, pages),
    ]
    for n in range(pages):
        square = b"0 0 0 rg 10 10 %d %d re f" % (20 + 10 * n, 20 + 10 * n)
        objects.append(
            b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 %d %d]/Contents %d 0 R>>"
            % (size[0], size[1], 4 + 2 * n)
        )
        objects.append(b"<</Length %d>>stream\n" % len(square) + square + b"\nendstream")
    return handmade_pdf(objects)


def locked_pdf() -> bytes:
    """Return a one-page PDF encrypted with a user password nobody here knows."""
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 300]>>",
        b"<</Filter/Standard/V 1/R 2/O<" + b"ab" * 32 + b">/U<" + b"cd" * 32 + b">/P -4>>",
    ]
    file_id = b"<0123456789abcdef0123456789abcdef>"
    return handmade_pdf(objects, b"/Encrypt 4 0 R/ID[" + file_id + file_id + b"]")


def image_bytes(
    fmt: str = "PNG", size: tuple[int, int] = (64, 48), color: str = "red", **save
) -> bytes:
    """Return a small image encoded in fmt."""
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format=fmt, **save)
    return out.getvalue()


def jpeg_with_gps() -> bytes:
    """Return a JPEG carrying EXIF: a camera model, a GPS position and an orientation."""
    image = Image.new("RGB", (40, 20), "blue")
    exif = Image.Exif()
    exif[0x0110] = "Secret Camera 9000"  # Model
    exif[0x0112] = 6  # Orientation: rotate 90 clockwise to display
    exif.get_ifd(0x8825)[2] = (52.0, 22.0, 1.0)  # GPSLatitude
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes(), comment=b"shot at home")
    return out.getvalue()


def put_file(caller: Caller, item_id: int, name: str, data: bytes, content_type: str = "image/png"):
    """PUT raw bytes as an attachment, the way an upstream client would."""
    response = caller.http.generic(
        "PUT",
        f"/api/v1/items/{item_id}/attachments/{name}",
        data=data,
        content_type=content_type,
        headers=caller._headers(),
    )
    return caller._reply(response)


@pytest.fixture
def upstream(queue) -> Caller:
    """An intake client granted the kyc queue."""
    return caller_for(make_client("upstream", [queue], adjudicate=False)[1])


@pytest.fixture
def item(queue) -> ReviewItem:
    return make_items(queue, 1, prefix="kyc")[0]
