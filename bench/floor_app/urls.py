from __future__ import annotations

from django.urls import include, path

from bench.floor_app import views

# The cycle's three URLs first; the rest (sign-in, /healthz) are Review Console's own.
urlpatterns = [
    path("queues/<slug:slug>/next/", views.next_item),
    path("items/<int:item_id>/", views.item),
    path("items/<int:item_id>/decide/", views.decide),
    path("", include("reviewconsole.urls")),
]
