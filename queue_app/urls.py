"""The reviewer console's URLs (the page contract in docs/architecture.md)."""

from __future__ import annotations

from django.urls import path

from queue_app.console import (
    attachment_views,
    deadline_views,
    lane_views,
    preference_views,
    suggestion_views,
    views,
)
from queue_app.mywork.views import my_work_page

urlpatterns = [
    path("", views.home, name="home"),
    path("my-work/", my_work_page, name="my-work"),
    path("me/preferences/", preference_views.my_preferences, name="me-preferences"),
    path("queues/<slug:slug>/next/", views.queue_next, name="queue-next"),
    path("items/<int:item_id>/", views.item_detail, name="item"),
    path("items/<int:item_id>/decide/", views.item_decide, name="item-decide"),
    path("items/<int:item_id>/release/", views.item_release, name="item-release"),
    path("items/<int:item_id>/renew/", views.item_renew, name="item-renew"),
    path(
        "items/<int:item_id>/attachments/<str:sha256>/",
        attachment_views.attachment_file,
        name="item-attachment",
    ),
    path(
        "items/<int:item_id>/attachments/<str:sha256>/pages/<int:page>/",
        attachment_views.attachment_page,
        name="item-attachment-page",
    ),
    path(
        "items/<int:item_id>/attachments/<str:sha256>/reveal/",
        attachment_views.attachment_reveal,
        name="item-attachment-reveal",
    ),
    path("items/<int:item_id>/hold/", deadline_views.item_hold, name="item-hold"),
    path(
        "items/<int:item_id>/suggestion/",
        suggestion_views.item_suggestion_reveal,
        name="item-suggestion",
    ),
    # Second-person lanes (queue_app/console/lane_views.py): checks, QA reviews, adjudications.
    path("queues/<slug:slug>/lanes/<str:kind>/next/", lane_views.lane_next, name="lane-next"),
    path("lanes/<int:task_id>/", lane_views.lane_task, name="lane-task"),
    path("lanes/<int:task_id>/confirm/", lane_views.lane_confirm, name="lane-confirm"),
    path("lanes/<int:task_id>/return/", lane_views.lane_return, name="lane-return"),
    path("lanes/<int:task_id>/qa/", lane_views.lane_qa, name="lane-qa"),
    path("lanes/<int:task_id>/adjudicate/", lane_views.lane_adjudicate, name="lane-adjudicate"),
    path("lanes/<int:task_id>/appeal/", lane_views.lane_appeal, name="lane-appeal"),
    path("lanes/<int:task_id>/release/", lane_views.lane_release, name="lane-release"),
    path("lanes/<int:task_id>/renew/", lane_views.lane_renew, name="lane-renew"),
]
