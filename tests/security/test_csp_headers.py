"""The Content-Security-Policy header is on every page, and none of our templates needs inline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
INLINE_STYLE = re.compile(r"<style\b|\sstyle=|\son[a-z]+=", re.I)


def _policy(response) -> dict[str, list[str]]:
    directives = {}
    for part in response["Content-Security-Policy"].split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/accounts/login/", "/", "/ops/", "/admin/", "/admin/queue_app/decision/", "/healthz"]
)
def test_every_page_carries_the_strict_policy(root, path):
    client = Client()
    client.force_login(root)
    policy = _policy(client.get(path))
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert "'unsafe-inline'" not in str(policy) and "'unsafe-eval'" not in str(policy)


def _our_templates() -> list[tuple[str, str]]:
    found = [
        (str(p.relative_to(ROOT)), p.read_text()) for p in (ROOT / "templates").rglob("*.html")
    ]
    # Templates kept as strings in Python modules (the API client's token page).
    for module in (ROOT / "queue_app").rglob("*.py"):
        text = module.read_text()
        if "{% extends" in text:
            found.append((str(module.relative_to(ROOT)), text))
    return found


def test_no_template_of_ours_has_inline_script_or_style():
    templates = _our_templates()
    assert len(templates) > 10
    offenders = [
        name for name, text in templates if INLINE_SCRIPT.search(text) or INLINE_STYLE.search(text)
    ]
    assert not offenders
