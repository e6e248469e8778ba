"""Operator pages: /ops/, /metrics, /healthz."""

urlpatterns: list = []
