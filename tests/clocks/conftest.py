"""The API's caller fixtures, for the deadline and subject API tests that live here."""

from tests.api.conftest import api, robot_client  # noqa: F401
