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
