from __future__ import annotations

from django.urls import path

from bench.minimal_app import views

urlpatterns = [
    path("healthz", views.healthz),
    path("accounts/login/", views.login),
    path("queues/<slug:slug>/next/", views.next_item),
    path("items/<int:item_id>/", views.item),
    path("items/<int:item_id>/decide/", views.decide),
]
