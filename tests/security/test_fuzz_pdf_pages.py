"""Hostile page and scale parameters on a PDF's page route: never a 5xx, never a picture the
bounds forbid; an answer is a PNG of a real page at one of the scales drawn, or words."""

from __future__ import annotations

import io
from decimal import Decimal
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from queue_app.pdf_pages import SCALES
from tests.security.conftest import World
from tests.security.strategies import odd_characters
from tests.security.test_fuzz_api import FIXED

pytestmark = pytest.mark.django_db

pages = st.one_of(
    st.sampled_from(["1", "2", "3", "0", "-1", "01", "1.5", "99999999999999999999", "", "x"]),
    st.integers(-5, 10**30).map(str),
    st.lists(odd_characters, min_size=1, max_size=4).map("".join),
)
scales = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "1",
            "1.5",
            "1.50",
            "2",
            "3",
            "0",
            "-1",
            "4",
            "1e3",
            "NaN",
            "Infinity",
            "sNaN",
            "0x2",
            "1" * 50,
            " 2",
            "2 ",
            "٢",
            "1.25",
            "",
        ]
    ),
    st.text(max_size=12),
    st.lists(odd_characters, min_size=1, max_size=6).map("".join),
)


@pytest.fixture
def reviewer(world: World) -> Client:
    client = Client()
    client.force_login(world.users["reviewer"])
    return client


@FIXED
@given(page=pages, scale=scales)
def test_the_page_route_survives_hostile_parameters(
    world: World, reviewer: Client, page: str, scale: str | None
) -> None:
    path = f"/items/{world.held.pk}/attachments/{world.held_pdf}/pages/{quote(page, safe='')}/"
    query = {} if scale is None else {"scale": scale}
    response = reviewer.get(path, query)
    assert response.status_code in (200, 400, 404), (page, scale, response.status_code)
    if response.status_code != 200:
        # Words, never a traceback: the console's refusal page (or Django's 404 for no route).
        assert b"Traceback" not in response.content
        return
    assert response["Content-Type"] == "image/png"
    assert page.isascii() and int(page) in (1, 2)
    picture = Image.open(io.BytesIO(response.content))
    drawn = next(s for s in SCALES if s == Decimal(scale or "1.5"))
    # A 200x300 point page at the scale asked, never more.
    assert picture.size == (round(200 * float(drawn)), round(300 * float(drawn)))
