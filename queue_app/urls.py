"""The reviewer console's URLs (DESIGN.md, Contract)."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
