"""Hostile attachment puts: any name, any bytes, any credential. Never a 5xx, never half-written:
an answer is a whole new attachment (scoped client, open item, a real image or PDF) or the one
error shape with nothing changed."""

from __future__ import annotations

import io
import json
import secrets
from typing import Any

import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from queue_app.evidence_files import valid_name
from tests.security.conftest import World
from tests.security.ledger import rolled_back
from tests.security.strategies import odd_characters
from tests.security.test_fuzz_api import AUTH, FIXED, check_answer, item_ids, tally

pytestmark = pytest.mark.django_db


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (6, 6), "teal").save(out, format="PNG")
    return out.getvalue()


PNG = _png()
PDF = b"%PDF-1.4\n%%EOF\n"

names = st.one_of(
    st.sampled_from(["id-front", "selfie.jpg", "a", "x" * 100, "x" * 101, ".env", "..", "a..b"]),
    st.lists(odd_characters, min_size=1, max_size=8).map("".join),
    st.text(min_size=1, max_size=30),
)
bodies = st.one_of(
    st.just(PNG),
    st.just(PDF),
    st.just(b""),
    st.binary(max_size=200),
    st.binary(max_size=64).map(lambda tail: PNG[:40] + tail),  # a real header, then garbage
    st.binary(max_size=64).map(lambda tail: b"%PDF-" + tail),
    st.just(b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"),
    st.just(b"GIF89a" + b"\0" * 20),
)


def _quote(name: str) -> str:
    from urllib.parse import quote

    return quote(name, safe="")


@FIXED
@given(data=st.data())
def test_attachment_put_survives_hostile_requests(world: World, data: Any) -> None:
    name = data.draw(names)
    body = data.draw(bodies)
    auth = data.draw(AUTH)
    item = data.draw(item_ids(world))
    token = {
        "scoped": world.tokens["api_scoped"],
        "unscoped": world.tokens["api_unscoped"],
        "forged": "rc_" + secrets.token_urlsafe(32),
    }.get(auth)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    content_type = data.draw(st.sampled_from(["image/png", "application/pdf", "text/html", ""]))
    with rolled_back() as change:
        response = Client().generic(
            "PUT",
            f"/api/v1/items/{item}/attachments/{_quote(name)}",
            data=body,
            content_type=content_type,
            headers=headers,
        )
    answer = check_answer(response, change)
    tally(response)
    assert change.after.decisions == change.before.decisions
    if response.status_code < 400:
        assert auth == "scoped" and valid_name(name)
        assert body in (PNG, PDF) or body.startswith((PNG[:8], b"%PDF-"))
        entry = next(a for a in answer["attachments"] if a["name"] == name)
        assert entry["content_type"] in ("image/png", "application/pdf")
        assert change.after.items == change.before.items
    else:
        assert json.loads(response.content)["error"]["code"] != "server_error"


# Where a reveal sends the browser back to: the page it came from, if that is a path on this
# site; anything else (another host, a scheme, a protocol-relative or backslashed URL, noise)
# falls back to the item page. Never an open redirect.
next_values = st.one_of(
    st.sampled_from(
        [
            "https://evil.example/",
            "//evil.example/x",
            "/\\evil.example",
            "\\\\evil.example",
            "javascript:alert(1)",
            "http://testserver/lanes/1/",
            " https://evil.example",
            "/lanes/1/#x",
            "/lanes/1/\r\nSet-Cookie: sessionid=x",
            "/\tevil.example",
            "",
        ]
    ),
    st.text(max_size=40),
    st.lists(odd_characters, max_size=8).map("".join),
)


@FIXED
@given(target=next_values)
def test_a_reveal_never_redirects_off_site(world: World, target: str) -> None:
    from django.utils.http import url_has_allowed_host_and_scheme

    client = Client()
    client.force_login(world.users["reviewer"])
    url = f"/items/{world.held.pk}/attachments/{world.held_attachment}/reveal/"
    with rolled_back():
        response = client.post(url, {"next": target})
    assert response.status_code == 302, response.status_code
    location = response["Location"]
    assert url_has_allowed_host_and_scheme(location, allowed_hosts={"testserver"}), location
    assert location.startswith("/") and not location.startswith(("//", "/\\")), location
    assert location.endswith(f"#attachment-{world.held_attachment[:12]}")
