"""The reviewer console's URLs (the page contract in docs/architecture.md)."""

from __future__ import annotations

from django.urls import path

from queue_app.console import views

urlpatterns = [
    path("", views.home, name="home"),
    path("queues/<slug:slug>/next/", views.queue_next, name="queue-next"),
    path("items/<int:item_id>/", views.item_detail, name="item"),
    path("items/<int:item_id>/decide/", views.item_decide, name="item-decide"),
    path("items/<int:item_id>/release/", views.item_release, name="item-release"),
    path("items/<int:item_id>/renew/", views.item_renew, name="item-renew"),
    path("items/<int:item_id>/hold/", views.item_hold, name="item-hold"),
]
