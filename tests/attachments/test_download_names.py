"""A file downloads under the extension of the type read from its bytes, never upstream's."""

from __future__ import annotations

import pytest

from queue_app.evidence_files import download_name
from tests.attachments.conftest import PDF_BYTES, image_bytes, put_file
from tests.console.conftest import login

pytestmark = pytest.mark.django_db

# A PDF whose first bytes also read as a web page: accepted as the PDF its signature says it is.
POLYGLOT = b"%PDF-1.4\n<html><script>alert(1)</script></html>\n" + PDF_BYTES[9:]


def _disposition(upstream, alice, item, name: str, data: bytes) -> str:
    reply = put_file(upstream, item.pk, name, data, "application/octet-stream")
    assert reply.status == 200, reply.body
    [entry] = [a for a in reply.body["attachments"] if a["name"] == name]
    response = login(alice).get(f"/items/{item.pk}/attachments/{entry['sha256']}/")
    assert response.status_code == 200
    return response["Content-Disposition"]


@pytest.mark.parametrize(
    ("name", "data", "downloaded"),
    [
        ("statement.html", PDF_BYTES, "attachment; filename*=UTF-8''statement.html.pdf"),
        ("statement.exe", PDF_BYTES, "attachment; filename*=UTF-8''statement.exe.pdf"),
        ("polyglot.html", POLYGLOT, "attachment; filename*=UTF-8''polyglot.html.pdf"),
        ("selfie.pdf", image_bytes("PNG"), "inline; filename*=UTF-8''selfie.pdf.png"),
        ("statement.PDF", PDF_BYTES, "attachment; filename*=UTF-8''statement.PDF"),
    ],
)
def test_it_names_the_download_after_the_type_the_bytes_have(
    upstream, alice, item, name, data, downloaded
):
    assert _disposition(upstream, alice, item, name, data) == downloaded


def test_it_keeps_a_name_whose_extension_already_fits():
    assert download_name("id-front.jpeg", "image/jpeg") == "id-front.jpeg"
    assert download_name("id-front.jpg", "image/jpeg") == "id-front.jpg"
    assert download_name("id-front", "image/webp") == "id-front.webp"
