"""PDF attachments read page by page: pictures drawn on the server, bounded, cached, refused with
words when the document cannot be read, and only ever to those who may see the item."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from queue_app import pdf_pages
from tests.attachments.conftest import PDF_BYTES, handmade_pdf, locked_pdf, pdf_bytes, put_file
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def own_cache(settings, tmp_path):
    settings.REVIEW_PDF_PAGE_CACHE_DIR = str(tmp_path / "pdf-pages")
    return tmp_path / "pdf-pages"


def put_pdf(upstream, item, data: bytes, name: str = "statement.pdf") -> str:
    body = put_file(upstream, item.pk, name, data, "application/pdf").body
    return next(a for a in body["attachments"] if a["name"] == name)["sha256"]


def page_url(item, sha: str, page: int) -> str:
    return f"/items/{item.pk}/attachments/{sha}/pages/{page}/"


def test_each_page_is_a_png_drawn_at_the_scale_asked(upstream, alice, item):
    sha = put_pdf(upstream, item, pdf_bytes(2))
    client = login(alice)
    response = client.get(page_url(item, sha, 2), {"scale": "2"})
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["Cache-Control"].startswith("private")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    picture = Image.open(io.BytesIO(response.content)).convert("L")
    assert picture.size == (400, 600)
    # Page 2's square (30x30 points at 10,10 from the bottom left) is drawn, black on white.
    assert picture.getpixel((40, 560)) < 50 and picture.getpixel((200, 100)) > 200
    # The default scale is 1.5.
    default = Image.open(io.BytesIO(client.get(page_url(item, sha, 1)).content))
    assert default.size == (300, 450)


def test_a_page_is_drawn_once_and_then_served_from_the_cache(upstream, alice, item, own_cache):
    sha = put_pdf(upstream, item, pdf_bytes(1))
    client = login(alice)
    first = client.get(page_url(item, sha, 1), {"scale": "1"}).content
    kept = own_cache / f"{sha}-p1-s1.png"
    assert kept.read_bytes() == first
    kept.write_bytes(b"drawn before")  # what the cache holds is what is served
    assert client.get(page_url(item, sha, 1), {"scale": "1"}).content == b"drawn before"


def test_a_huge_page_is_drawn_within_the_pixel_bound(upstream, alice, item, settings):
    settings.REVIEW_PDF_MAX_PIXELS = 1_000_000
    sha = put_pdf(upstream, item, pdf_bytes(1, size=(14400, 14400)))
    response = login(alice).get(page_url(item, sha, 3 - 2), {"scale": "3"})
    width, height = Image.open(io.BytesIO(response.content)).size
    assert width * height <= 1_000_000 and width > 900


def test_only_the_first_pages_are_offered_and_the_page_says_so(upstream, alice, item, settings):
    settings.REVIEW_PDF_MAX_PAGES = 2
    sha = put_pdf(upstream, item, pdf_bytes(3))
    client = login(alice)
    assert client.get(page_url(item, sha, 2)).status_code == 200
    beyond = client.get(page_url(item, sha, 3))
    assert beyond.status_code == 404 and b"pages 1 to 2" in beyond.content
    page = client.get(f"/items/{item.pk}/").content.decode()
    assert "Only the first 2 of 3 pages are shown here" in page
    assert f'href="/items/{item.pk}/attachments/{sha}/" download' in page


def test_the_item_page_shows_pages_as_pictures_from_the_server_and_keeps_the_download(
    upstream, alice, item
):
    sha = put_pdf(upstream, item, pdf_bytes(2))
    page = login(alice).get(f"/items/{item.pk}/").content.decode()
    assert re.search(rf'<img[^>]+src="{page_url(item, sha, 1)}\?scale=1"', page)
    assert f'data-pages="{page_url(item, sha, 1)} {page_url(item, sha, 2)}"' in page
    assert "Download statement.pdf" in page
    # No PDF is ever put in the page for the browser to render.
    assert not re.search(r"<(embed|iframe|object)\b", page)
    assert "pdf.js" not in page


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (locked_pdf(), pdf_pages.LOCKED),
        (PDF_BYTES, pdf_pages.DAMAGED),
        (b"%PDF-1.7\n" + b"\x00garbage" * 40, pdf_pages.DAMAGED),
        (
            handmade_pdf(
                [
                    b"<</Type/Catalog/Pages 2 0 R>>",
                    b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
                    b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 0 0]>>",
                ]
            ),
            None,
        ),
    ],
    ids=["locked", "no-pages", "garbage", "zero-size-page"],
)
def test_a_pdf_that_cannot_be_drawn_is_answered_with_words_and_the_download_stays(
    upstream, alice, item, data, words
):
    sha = put_pdf(upstream, item, data)
    client = login(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    assert page.count("Download statement.pdf") == 1
    answer = client.get(page_url(item, sha, 1))
    assert answer.status_code in (200, 404)
    if words is not None:
        assert words.replace("'", "&#x27;") in page or words in page
        assert answer.status_code == 404
        assert words.split(",")[0].encode() in answer.content
        assert "data-pages" not in page


def test_pages_follow_the_items_access_rule(upstream, outsider, item, client):
    sha = put_pdf(upstream, item, pdf_bytes(1))
    url = page_url(item, sha, 1)
    assert login(outsider).get(url).status_code == 404
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_an_image_or_a_replaced_pdf_has_no_pages(upstream, alice, item):
    from tests.attachments.conftest import image_bytes

    photo = put_file(upstream, item.pk, "id-front", image_bytes("PNG")).body["attachments"][0]
    old = put_pdf(upstream, item, pdf_bytes(1))
    put_pdf(upstream, item, pdf_bytes(2))
    client = login(alice)
    assert client.get(page_url(item, photo["sha256"], 1)).status_code == 404
    assert client.get(page_url(item, old, 1)).status_code == 404


@pytest.mark.parametrize("scale", ["0", "4", "1.25", "abc", "NaN", "1e1", "-1"])
def test_a_scale_not_drawn_is_refused_with_words(upstream, alice, item, scale):
    sha = put_pdf(upstream, item, pdf_bytes(1))
    response = login(alice).get(page_url(item, sha, 1), {"scale": scale})
    assert response.status_code == 400
    assert b"The scale must be one of 1, 1.5, 2 or 3." in response.content


def test_a_pdf_that_takes_too_long_is_answered_with_words_and_tried_again_later(
    upstream, alice, item, settings, own_cache
):
    """The drawing process is killed at REVIEW_PDF_RENDER_SECONDS; the answer says so, and a
    later request (a quieter moment, a longer bound) draws the page: nothing slow is kept."""
    sha = put_pdf(upstream, item, pdf_bytes(1))
    client = login(alice)
    settings.REVIEW_PDF_RENDER_SECONDS = 0.001  # no process starts in a millisecond
    page = client.get(f"/items/{item.pk}/").content.decode()
    assert "took too long to draw here" in page and "Download statement.pdf" in page
    answer = client.get(page_url(item, sha, 1))
    assert answer.status_code == 404 and b"took too long" in answer.content
    assert not list(own_cache.glob("*"))  # neither the count nor a refusal was kept
    settings.REVIEW_PDF_RENDER_SECONDS = 30
    drawn = client.get(page_url(item, sha, 1))
    assert drawn.status_code == 200 and drawn["Content-Type"] == "image/png"


def test_a_pdf_that_outgrows_its_memory_costs_the_drawing_process_not_the_web_worker(
    upstream, alice, item, settings, own_cache
):
    sha = put_pdf(upstream, item, pdf_bytes(1))
    settings.REVIEW_PDF_RENDER_MEMORY_MB = 1  # the drawing process cannot allocate anything
    answer = login(alice).get(page_url(item, sha, 1))
    assert answer.status_code == 404
    assert pdf_pages.UNREADABLE.split(",")[0].encode() in answer.content
    # The web worker that asked is untouched: it answers the next request as usual.
    assert login(alice).get(f"/items/{item.pk}/").status_code == 200
