"""Blind QA in the admin: an item whose QA review the viewer holds is not there for them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from queue_app.services.blindness import blinded_item_ids


class BlindQAAdmin(admin.ModelAdmin):
    """Leave out the rows of items whose QA review the viewer holds (services/blindness.py).

    Every admin page of a model reads its rows through get_queryset, so the changelists, the
    change pages (a missing row: "doesn't exist") and the overturn form all leave them out.
    blind_item_path is the lookup from the model to its item's id.
    """

    blind_item_path = "item_id"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows = super().get_queryset(request)
        blinded = blinded_item_ids(user=request.user)
        if blinded:
            rows = rows.exclude(**{f"{self.blind_item_path}__in": blinded})
        return rows
