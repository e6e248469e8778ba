"""Fixtures for the accessibility checks: a superuser and the console's browser window."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.console.conftest import browser_context_args  # noqa: F401  (the 1366 px window)
from tests.lanes.conftest import carol, checked_queue  # noqa: F401  (a checker, a checked queue)


@pytest.fixture
def root(db) -> User:
    """A superuser: /ops/ and every admin page."""
    return User.objects.create_superuser("root", password="pw-root")
