"""Fixtures for My work: a third reviewer (the QA reviewer) from the lanes tests."""

from tests.lanes.conftest import carol  # noqa: F401 (a fixture)
