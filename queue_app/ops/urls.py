"""Operator pages: /ops/, /metrics, /healthz."""

from __future__ import annotations

from django.urls import path

from queue_app.ops import automation, oversight, transparency, views

app_name = "ops"

urlpatterns = [
    path("ops/", views.dashboard, name="dashboard"),
    path("ops/effect-jobs/<int:decision_id>/retry/", views.retry_dead_job, name="retry_dead_job"),
    path("ops/automation/", automation.press_global_switch, name="automation_all"),
    path("ops/automation/<int:queue_id>/", automation.press_queue_switch, name="automation_queue"),
    # The oversight figures as files (the /ops/ section's), one route per format.
    path("ops/oversight.csv", oversight.oversight_export, {"fmt": "csv"}, name="oversight_csv"),
    path("ops/oversight.json", oversight.oversight_export, {"fmt": "json"}, name="oversight_json"),
    # The transparency report of a period (?from=YYYY-MM-DD&to=YYYY-MM-DD), one route per format.
    path(
        "ops/transparency.csv",
        transparency.transparency_export,
        {"fmt": "csv"},
        name="transparency_csv",
    ),
    path(
        "ops/transparency.json",
        transparency.transparency_export,
        {"fmt": "json"},
        name="transparency_json",
    ),
    path("metrics", views.metrics, name="metrics"),
    path("healthz", views.healthz, name="healthz"),
]
