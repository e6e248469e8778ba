"""Fixtures for machine suggestions: the API's callers, and items that carry a suggestion."""

from __future__ import annotations

from tests.api.conftest import anonymous, api, robot_client

__all__ = ["anonymous", "api", "robot_client"]
