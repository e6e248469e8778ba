"""My viewing preferences: saved whole or not at all, the queue's default where I chose none, and
applied to a sensitive queue's images on the item page."""

from __future__ import annotations

import pytest

from queue_app.models import ItemEvent, ItemEventKind, ReviewerPreferences
from queue_app.selectors.wellness import viewing_for
from tests.attachments.conftest import image_bytes, put_file
from tests.console.conftest import login

pytestmark = pytest.mark.django_db

URL = "/me/preferences/"


@pytest.fixture
def sensitive(queue):
    queue.sensitive = True
    queue.veil_blur = "low"
    queue.veil_greyscale = False
    queue.save()
    return queue


@pytest.fixture
def photo(upstream, item) -> dict:
    return put_file(upstream, item.pk, "id-front", image_bytes("PNG")).body["attachments"][0]


def test_the_page_is_reached_from_the_header_and_shows_the_queue_defaults(alice, sensitive):
    client = login(alice)
    home = client.get("/").content.decode()
    assert f'href="{URL}"' in home
    page = client.get(URL).content.decode()
    assert "Viewing preferences" in page
    assert "Low (shapes show through)" in page  # the kyc queue's default, in its table


def test_my_choices_are_saved_and_shown_back(alice, sensitive):
    client = login(alice)
    response = client.post(URL, {"blur": "high", "greyscale": "on", "autoplay": "off"})
    assert response.status_code == 302 and response["Location"] == URL
    saved = ReviewerPreferences.objects.get(user=alice)
    assert (saved.blur, saved.greyscale, saved.autoplay) == ("high", True, False)
    page = client.get(URL).content.decode()
    assert '<option value="high" selected>' in page
    assert "Your viewing preferences are saved." in page


def test_the_queue_default_is_used_for_each_choice_i_left_to_it(alice, bob, sensitive):
    assert viewing_for(user_id=bob.pk, queue=sensitive) == viewing_for(
        user_id=alice.pk, queue=sensitive
    )
    login(alice).post(URL, {"blur": "", "greyscale": "on", "autoplay": ""})
    mine = viewing_for(user_id=alice.pk, queue=sensitive)
    assert (mine.blur, mine.greyscale, mine.autoplay) == ("low", True, False)
    nobody = viewing_for(user_id=bob.pk, queue=sensitive)  # bob chose nothing at all
    assert (nobody.blur, nobody.greyscale, nobody.autoplay) == ("low", False, False)


@pytest.mark.parametrize(
    "posted",
    [
        {"blur": "extreme", "greyscale": "on", "autoplay": "off"},
        {"blur": "low", "greyscale": "maybe", "autoplay": "off"},
        {"blur": "low", "greyscale": "on", "autoplay": "\x00"},
        {"blur": "low" * 100, "greyscale": "on", "autoplay": "on"},
    ],
)
def test_bad_input_is_refused_with_words_and_nothing_saved(alice, sensitive, posted):
    client = login(alice)
    client.post(URL, {"blur": "high", "greyscale": "off", "autoplay": "off"})
    response = client.post(URL, posted)
    assert response.status_code == 400
    assert "Nothing was saved" in response.content.decode()
    saved = ReviewerPreferences.objects.get(user=alice)
    assert (saved.blur, saved.greyscale, saved.autoplay) == ("high", False, False)


def test_the_item_page_applies_my_choices_and_the_queue_default_otherwise(
    alice, bob, sensitive, item, photo
):
    page = login(bob).get(f"/items/{item.pk}/").content.decode()
    assert 'class="attachments veil-blur-low"' in page  # the queue's default, in colour
    login(alice).post(URL, {"blur": "none", "greyscale": "on", "autoplay": ""})
    page = login(alice).get(f"/items/{item.pk}/").content.decode()
    assert 'class="attachments veil-blur-none veil-grey"' in page
    assert "each stays covered and grey until you reveal it" in page
    # Whatever the choice, the image is veiled until revealed, and the reveal is recorded.
    assert page.count("attachment-image-link veiled") == 1
    login(alice).post(f"/items/{item.pk}/attachments/{photo['sha256']}/reveal/")
    assert ItemEvent.objects.filter(
        item=item, kind=ItemEventKind.ATTACHMENT_REVEALED, actor=alice
    ).exists()


def test_a_plain_queue_is_not_veiled_whatever_i_chose(alice, queue, item, photo):
    login(alice).post(URL, {"blur": "high", "greyscale": "on", "autoplay": "off"})
    page = login(alice).get(f"/items/{item.pk}/").content.decode()
    assert "veil-" not in page and "Reveal image" not in page
