"""The console's pages carry no inline script or style, so a strict CSP can be switched on."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from queue_app.services import claim_next
from tests.conftest import make_items

pytestmark = pytest.mark.django_db

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
INLINE_STYLE = re.compile(r"<style\b|\sstyle=|\son[a-z]+=", re.I)


def test_no_page_has_inline_script_style_or_handlers(client: Client, alice_client, alice, queue):
    make_items(queue, 2)
    held = claim_next(queue=queue, reviewer=alice)
    pages = {
        "login": client.get("/accounts/login/"),
        "home": alice_client.get("/"),
        "item": alice_client.get(f"/items/{held.pk}/"),
        "refused": alice_client.get("/items/999999/"),
    }
    for name, response in pages.items():
        html = response.content.decode()
        assert "console/console.js" in html, name
        assert not INLINE_SCRIPT.search(html), name
        assert not INLINE_STYLE.search(html), name
