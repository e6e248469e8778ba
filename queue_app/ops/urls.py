"""Operator pages: /ops/, /metrics, /healthz."""

from __future__ import annotations

from django.urls import path

from queue_app.ops import views

app_name = "ops"

urlpatterns = [
    path("ops/", views.dashboard, name="dashboard"),
    path("ops/effect-jobs/<int:decision_id>/retry/", views.retry_dead_job, name="retry_dead_job"),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
]
