"""The console's own base document stays in step with the admin pages it looks like.

templates/jinja2/console/base.html no longer extends admin/base_site.html (four levels of extends on
every render). These tests keep it honest: the stylesheets and scripts an admin page loads, the
ids and classes admin's CSS and theme script style, and Django's icons all appear on a console
page too, so a Django upgrade that changes admin/base.html fails here instead of quietly
leaving the console half-styled.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.template.loader import render_to_string
from django.test import RequestFactory

pytestmark = pytest.mark.django_db

# What only the admin's own pages have: its navigation sidebar.
ADMIN_ONLY = {"nav_sidebar", "nav-sidebar", "toggle-nav-sidebar", "nav-filter"}


class Document(HTMLParser):
    """Collect a page's head assets and the ids and classes of its body."""

    def __init__(self) -> None:
        super().__init__()
        self.assets: list[str] = []
        self.ids: set[str] = set()
        self.classes: set[str] = set()
        self.symbols: set[str] = set()
        self.in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "head":
            self.in_head = True
        if self.in_head and tag == "link" and a.get("rel") == "stylesheet":
            self.assets.append(a["href"] or "")
        if self.in_head and tag == "script":
            self.assets.append(a.get("src") or "")
        if tag == "symbol":
            self.symbols.add(a.get("id") or "")
        elif a.get("id"):
            self.ids.add(a["id"] or "")
        self.classes.update((a.get("class") or "").split())

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self.in_head = False


def parse(html: str) -> Document:
    doc = Document()
    doc.feed(html)
    return doc


def without_admin_only(names: set[str]) -> set[str]:
    return {n for n in names if not any(part in n for part in ADMIN_ONLY)}


@pytest.fixture
def pages(alice) -> tuple[Document, Document, str]:
    """An admin page and a console page, rendered for the same signed-in user."""
    request = RequestFactory().get("/")
    request.user = alice
    admin = render_to_string("admin/base_site.html", {"title": "T"}, request)
    console = render_to_string("console/refused.html", {"title": "T", "message": "m"}, request)
    return parse(admin), parse(console), console


def test_a_console_page_loads_every_stylesheet_and_script_an_admin_page_loads(pages):
    admin, console, _ = pages
    missing = [a for a in admin.assets if a not in console.assets]
    assert missing == []
    # In admin's order, so the console's own stylesheets still come after admin's and win.
    assert [a for a in console.assets if a in admin.assets] == admin.assets
    assert console.assets.index("/static/console/console.css") > console.assets.index(
        "/static/admin/css/base.css"
    )


def test_a_console_page_has_the_structure_admin_css_and_the_theme_script_style(pages):
    admin, console, _ = pages
    assert without_admin_only(admin.ids) - console.ids == set()
    assert without_admin_only(admin.classes) - console.classes == set()
    assert admin.symbols == console.symbols == {"icon-auto", "icon-moon", "icon-sun"}


def test_a_console_page_extends_no_admin_template(pages):
    # Render-time cost is the point: the chain must stay one level (page -> console/base.html).
    source = (settings.BASE_DIR / "templates/jinja2/console/base.html").read_text(encoding="utf-8")
    assert not re.search(r"\{%\s*extends", source)
    _, _, html = pages
    assert 'data-admin-utc-offset="' in html
    assert "Signed in as" in html
