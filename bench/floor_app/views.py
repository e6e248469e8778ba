"""The reviewer cycle's pages, signed in and CSRF-checked as Review Console's, doing no work.

Next and decide redirect to an item page and the item page carries the two fields the load
generator reads back (bench/web.py), so B4's reviewers run the same requests against this as
against the app; no database query but what the middleware makes, no template, no service.
"""

from __future__ import annotations

import itertools

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

_items = itertools.count(1)
FORM = (
    '<form method="post"><input name="lease_token" value="00000000-0000-0000-0000-000000000000">'
    '<input name="evidence_hash" value="{}"></form>'
).format("0" * 64)


@require_POST
@login_required
def next_item(request: HttpRequest, slug: str) -> HttpResponse:
    return redirect(f"/items/{next(_items)}/")


@require_GET
@login_required
def item(request: HttpRequest, item_id: int) -> HttpResponse:
    return HttpResponse(f"<h1>Item {item_id}</h1>{FORM}")


@require_POST
@login_required
def decide(request: HttpRequest, item_id: int) -> HttpResponse:
    return redirect(f"/items/{next(_items)}/")
