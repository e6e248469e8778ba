"""Operator pages: /ops/, /metrics, /healthz."""

from __future__ import annotations

from django.urls import path

from queue_app.ops import automation, views

app_name = "ops"

urlpatterns = [
    path("ops/", views.dashboard, name="dashboard"),
    path("ops/effect-jobs/<int:decision_id>/retry/", views.retry_dead_job, name="retry_dead_job"),
    path("ops/automation/", automation.press_global_switch, name="automation_all"),
    path("ops/automation/<int:queue_id>/", automation.press_queue_switch, name="automation_queue"),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
]
