"""The reviewer console's URLs (the page contract in docs/architecture.md)."""

from __future__ import annotations

from django.urls import path

from queue_app.console import attachments, views
from queue_app.mywork.views import my_work_page

urlpatterns = [
    path("", views.home, name="home"),
    path("my-work/", my_work_page, name="my-work"),
    path("queues/<slug:slug>/next/", views.queue_next, name="queue-next"),
    path("items/<int:item_id>/", views.item_detail, name="item"),
    path("items/<int:item_id>/decide/", views.item_decide, name="item-decide"),
    path("items/<int:item_id>/release/", views.item_release, name="item-release"),
    path("items/<int:item_id>/renew/", views.item_renew, name="item-renew"),
    path(
        "items/<int:item_id>/attachments/<str:sha256>/",
        attachments.attachment_file,
        name="item-attachment",
    ),
    path(
        "items/<int:item_id>/attachments/<str:sha256>/reveal/",
        attachments.attachment_reveal,
        name="item-attachment-reveal",
    ),
    path("items/<int:item_id>/hold/", views.item_hold, name="item-hold"),
]
