"""What upstream may attach: the type by content, the limits, and nothing but pixels kept."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from queue_app.evidence_files import blob_path, storage
from queue_app.models import ItemEvent, ReviewItem
from tests.api.conftest import caller_for, make_client
from tests.attachments.conftest import PDF_BYTES, image_bytes, jpeg_with_gps, put_file

pytestmark = pytest.mark.django_db


def stored_bytes(sha256: str) -> bytes:
    with storage().open(blob_path(sha256), "rb") as handle:
        return handle.read()


@pytest.mark.parametrize(
    ("name", "data", "declared"),
    [
        ("photo.jpg", b"<html><script>alert(1)</script></html>", "image/jpeg"),
        ("scan.pdf", b"MZ\x90\x00\x03\x00\x00\x00 not a pdf, an executable", "application/pdf"),
        ("anim.png", b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00,", "image/png"),
        ("doc.png", b"PK\x03\x04 a zip renamed", "image/png"),
        ("empty.png", b"", "image/png"),
    ],
)
def test_it_refuses_a_file_that_is_not_what_its_name_says(upstream, item, name, data, declared):
    reply = put_file(upstream, item.pk, name, data, declared)
    assert reply.status == 415, reply.body
    assert reply.body["error"]["code"] == "unsupported_media_type"
    assert ReviewItem.objects.get(pk=item.pk).attachments == {}
    assert not ItemEvent.objects.filter(item=item, kind="attachment_put").exists()


def test_it_refuses_a_truncated_image(upstream, item):
    broken = image_bytes("PNG", size=(400, 400))[:200]
    reply = put_file(upstream, item.pk, "broken.png", broken)
    assert reply.status == 415
    assert "could not be read" in reply.body["error"]["message"]


def test_it_strips_exif_gps_and_comments_but_keeps_the_picture_upright(upstream, item):
    original = jpeg_with_gps()
    assert b"Secret Camera" in original and b"shot at home" in original

    reply = put_file(upstream, item.pk, "selfie.jpg", original, "image/jpeg")

    assert reply.status == 200, reply.body
    kept = stored_bytes(reply.body["attachments"][0]["sha256"])
    assert b"Secret Camera" not in kept and b"shot at home" not in kept
    with Image.open(io.BytesIO(kept)) as image:
        assert not image.getexif()
        assert "comment" not in image.info
        # Orientation 6 was applied to the pixels: 40x20 stands as 20x40.
        assert image.size == (20, 40)


def test_it_drops_text_chunks_and_anything_after_a_png(upstream, item):
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Author", "home address 1 Main St")
    out = io.BytesIO()
    Image.new("RGB", (10, 10), "white").save(out, format="PNG", pnginfo=info)
    data = out.getvalue() + b"<script>appended</script>"

    reply = put_file(upstream, item.pk, "scan.png", data)

    assert reply.status == 200
    kept = stored_bytes(reply.body["attachments"][0]["sha256"])
    assert b"Main St" not in kept and b"appended" not in kept


def test_it_refuses_a_decompression_bomb_before_decoding(upstream, item, settings):
    settings.REVIEW_ATTACHMENT_MAX_PIXELS = 1_000_000
    # 2000 x 2000 of one colour compresses to a few kilobytes and decodes to 4 megapixels.
    bomb = image_bytes("PNG", size=(2000, 2000), color="black")
    assert len(bomb) < 50_000
    reply = put_file(upstream, item.pk, "bomb.png", bomb)
    assert reply.status == 415
    assert "pixels" in reply.body["error"]["message"]


def test_it_refuses_a_file_over_the_per_file_limit_before_reading_it(upstream, item, settings):
    settings.REVIEW_ATTACHMENT_MAX_BYTES = 1000
    big = image_bytes("PNG", size=(300, 300), color="white") + b"\0" * 1000
    reply = put_file(upstream, item.pk, "big.png", big)
    assert reply.status == 413
    assert reply.body["error"]["code"] == "payload_too_large"
    assert reply.body["error"]["details"] == {"limit_bytes": 1000}


def test_it_refuses_a_file_that_takes_the_item_over_its_total(upstream, item, settings):
    first = put_file(upstream, item.pk, "one.pdf", PDF_BYTES, "application/pdf")
    assert first.status == 200
    settings.REVIEW_ATTACHMENTS_MAX_ITEM_BYTES = len(PDF_BYTES) + 10
    reply = put_file(upstream, item.pk, "two.pdf", PDF_BYTES + b"%more\n", "application/pdf")
    assert reply.status == 413
    assert "per item" in reply.body["error"]["message"]
    assert list(ReviewItem.objects.get(pk=item.pk).attachments) == ["one.pdf"]
    # Replacing a file counts its new size instead of the old one, not on top of it.
    smaller = put_file(upstream, item.pk, "one.pdf", PDF_BYTES[:-1] + b" \n", "application/pdf")
    assert smaller.status == 200


def test_it_refuses_more_files_than_the_count_limit(upstream, item, settings):
    settings.REVIEW_ATTACHMENTS_MAX_COUNT = 2
    for n in range(2):
        assert (
            put_file(upstream, item.pk, f"f{n}.png", image_bytes(color=f"#0000{n}0")).status == 200
        )
    reply = put_file(upstream, item.pk, "f2.png", image_bytes(color="yellow"))
    assert reply.status == 413
    assert "at most 2" in reply.body["error"]["message"]


@pytest.mark.parametrize("name", [".hidden", "a" * 101, "with space", "semi;colon", "-dash"])
def test_it_refuses_a_name_outside_the_rule(upstream, item, name):
    reply = put_file(upstream, item.pk, name, image_bytes())
    assert reply.status in (404, 422)
    assert ReviewItem.objects.get(pk=item.pk).attachments == {}


def test_it_needs_the_intake_scope_and_a_visible_item(queue, item, reviewers_group):
    from tests.conftest import make_queue

    adjudicator = caller_for(make_client("adj", [queue], intake=False)[1])
    assert put_file(adjudicator, item.pk, "x.png", image_bytes()).status == 403
    other_queue = make_queue("other", group=reviewers_group)
    stranger = caller_for(make_client("stranger", [other_queue])[1])
    assert put_file(stranger, item.pk, "x.png", image_bytes()).status == 404
    assert put_file(caller_for(None), item.pk, "x.png", image_bytes()).status == 401
    assert ReviewItem.objects.get(pk=item.pk).attachments == {}


def test_the_database_refuses_changing_a_decided_items_attachments(item):
    from django.db import IntegrityError, connection, transaction

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET state = 'decided', decided_at = now() WHERE id = %s",
            [item.pk],
        )
        with pytest.raises(IntegrityError, match="decided"), transaction.atomic():
            cursor.execute(
                "UPDATE queue_app_reviewitem SET attachments = '{\"x\": {}}' WHERE id = %s",
                [item.pk],
            )
        with pytest.raises(IntegrityError), transaction.atomic():
            cursor.execute(
                "UPDATE queue_app_reviewitem SET attachments = '[]', state = 'pending', "
                "decided_at = NULL WHERE id = %s",
                [item.pk],
            )
