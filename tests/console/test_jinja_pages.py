"""The reviewer's pages under Jinja2 (reviewconsole/jinja_env.py) print what Django's did.

The page-by-page behaviour is tested where it always was (tests/console/, tests/a11y/ and the
rest); these are the places where Jinja2 and Django's template language differ by default.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from django.template.loader import get_template, render_to_string
from django.templatetags.static import static
from django.test import Client, override_settings
from django.urls import reverse, set_script_prefix

from queue_app.services import claim_next
from reviewconsole.jinja_env import regroup, static_url, url
from tests.conftest import make_items

pytestmark = pytest.mark.django_db


def test_regroup_keeps_the_lists_order_where_jinja2s_groupby_would_sort():
    rows = [SimpleNamespace(verdict=v) for v in ("reject", "reject", "approve", "escalate")]
    groups = regroup(rows, "verdict")
    assert [g.grouper for g in groups] == ["reject", "approve", "escalate"]
    assert [len(g.list) for g in groups] == [2, 1, 1]


def test_the_console_pages_are_jinja2_and_the_admin_keeps_djangos():
    assert get_template("console/item.html").backend.name == "jinja2"
    assert get_template("registration/login.html").backend.name == "jinja2"
    assert get_template("admin/base_site.html").backend.name == "django"


def test_one_masked_csrf_token_serves_every_form_on_the_item_page(alice, queue):
    make_items(queue, 1)
    item = claim_next(queue=queue, reviewer=alice)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    html = client.get(f"/items/{item.pk}/").content.decode()
    tokens = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    # The decision, release and log-out forms (and the hold form, where a queue has holds).
    assert len(tokens) == 3
    assert len(set(tokens)) == 1
    # And the token is a good one: the release form posts with it.
    lease_token = re.search(r'name="lease_token" value="([^"]+)"', html).group(1)
    response = client.post(
        f"/items/{item.pk}/release/",
        {"csrfmiddlewaretoken": tokens[0], "lease_token": lease_token},
    )
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.state == "pending"


def test_a_page_without_a_request_renders_with_nothing_for_the_missing_user():
    # The 503 page is rendered by the error middleware without a request: no user, no CSRF.
    html = render_to_string("503.html", {"message": "Busy.", "retry": "/"})
    assert "Busy." in html
    assert "Signed in as" not in html
    assert "csrfmiddlewaretoken" not in html


def test_file_sizes_read_as_djangos_filesizeformat_prints_them():
    # Jinja2's own filter would print "1.5 kB" (powers of 1000); the console always said KB.
    template = get_template("console/_attachments.html")
    card = SimpleNamespace(
        anchor="a1",
        sha256="ab" * 32,
        is_image=False,
        veiled=False,
        url="/x",
        name="statement.pdf",
        kind="PDF",
        size=1536,
        content_type="application/pdf",
    )
    html = template.render({"attachments": [card], "queue": SimpleNamespace(sensitive=False)})
    assert "1.5\xa0KB" in html


def test_remembered_urls_and_static_paths_follow_the_script_prefix_and_the_settings():
    # url and static remember what they printed; the script prefix (an app served under a
    # path, SCRIPT_NAME) and the settings they read are part of what they remember it by.
    assert url("item", 7) == reverse("item", args=[7]) == "/items/7/"
    assert static_url("console/console.css") == static("console/console.css")
    try:
        set_script_prefix("/review/")
        assert url("item", 7) == "/review/items/7/"
        assert static_url("console/console.css") == static("console/console.css")
    finally:
        set_script_prefix("/")
    assert url("item", 7) == "/items/7/"
    with override_settings(STATIC_URL="/assets/"):
        assert static_url("console/console.css").startswith("/assets/")
    assert static_url("console/console.css") == static("console/console.css")
    with override_settings(ROOT_URLCONF="tests.console.moved_urls"):
        assert url("item", 7) == "/moved/items/7/"
    assert url("item", 7) == "/items/7/"
