"""Attachments on the item page: served only through the item's access rule, revealed one by one."""

from __future__ import annotations

import pytest

from queue_app.models import ItemEvent, ItemEventKind
from tests.attachments.conftest import PDF_BYTES, image_bytes, put_file
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def photo(upstream, item) -> dict:
    return put_file(upstream, item.pk, "id-front", image_bytes("PNG")).body["attachments"][0]


def test_it_serves_an_image_privately_with_its_name_and_no_sniffing(alice, item, photo):
    response = login(alice).get(f"/items/{item.pk}/attachments/{photo['sha256']}/")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == "inline; filename*=UTF-8''id-front.png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Cache-Control"].startswith("private")
    assert "sandbox" in response["Content-Security-Policy"]


def test_it_serves_a_pdf_as_a_download_only(upstream, alice, item):
    doc = put_file(upstream, item.pk, "statement.pdf", PDF_BYTES, "application/pdf").body
    sha = doc["attachments"][0]["sha256"]
    response = login(alice).get(f"/items/{item.pk}/attachments/{sha}/")
    assert response["Content-Disposition"] == "attachment; filename*=UTF-8''statement.pdf"
    assert b"".join(response.streaming_content) == PDF_BYTES


def test_it_hides_attachments_from_those_who_may_not_see_the_item(outsider, item, photo, client):
    url = f"/items/{item.pk}/attachments/{photo['sha256']}/"
    assert login(outsider).get(url).status_code == 404
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert login(outsider).post(url + "reveal/").status_code == 404
    assert not ItemEvent.objects.filter(kind=ItemEventKind.ATTACHMENT_REVEALED).exists()


def test_it_serves_no_digest_the_item_does_not_hold_now(upstream, alice, item, photo):
    put_file(upstream, item.pk, "id-front", image_bytes("PNG", color="white"))
    old = login(alice).get(f"/items/{item.pk}/attachments/{photo['sha256']}/")
    assert old.status_code == 404
    assert login(alice).get(f"/items/{item.pk}/attachments/{'0' * 64}/").status_code == 404


def test_a_plain_queue_shows_images_unveiled(alice, item, photo):
    page = login(alice).get(f"/items/{item.pk}/").content.decode()
    assert 'class="attachment-image"' in page
    assert "veiled" not in page and "Reveal image" not in page


def test_a_sensitive_queue_veils_each_image_until_revealed(queue, alice, item, photo, upstream):
    queue.sensitive = True
    queue.save()
    second = put_file(upstream, item.pk, "selfie", image_bytes("PNG", color="blue")).body
    client = login(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    assert page.count("attachment-image-link veiled") == 2
    assert "Reveal image id-front" in page and "Reveal image selfie" in page

    # Without JavaScript: the form posts, the reveal is recorded, the page comes back with
    # that one image shown and the other still veiled.
    response = client.post(f"/items/{item.pk}/attachments/{photo['sha256']}/reveal/")
    assert response.status_code == 302
    assert response["Location"].endswith(f"#attachment-{photo['sha256'][:12]}")
    page = client.get(f"/items/{item.pk}/").content.decode()
    assert page.count("attachment-image-link veiled") == 1
    assert "Reveal image id-front" not in page and "Reveal image selfie" in page

    # With JavaScript: JSON, the same event.
    sha = next(a for a in second["attachments"] if a["name"] == "selfie")["sha256"]
    reply = client.post(
        f"/items/{item.pk}/attachments/{sha}/reveal/", headers={"Accept": "application/json"}
    )
    assert reply.json() == {"ok": True, "name": "selfie"}
    events = ItemEvent.objects.filter(item=item, kind=ItemEventKind.ATTACHMENT_REVEALED)
    assert [(e.actor_id, e.detail["name"]) for e in events] == [
        (alice.pk, "id-front"),
        (alice.pk, "selfie"),
    ]


def test_reveal_takes_only_a_post_with_a_csrf_token(queue, alice, item, photo):
    from django.test import Client

    queue.sensitive = True
    queue.save()
    url = f"/items/{item.pk}/attachments/{photo['sha256']}/reveal/"
    assert login(alice).get(url).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(alice)
    assert strict.post(url).status_code == 403
    assert not ItemEvent.objects.filter(kind=ItemEventKind.ATTACHMENT_REVEALED).exists()
