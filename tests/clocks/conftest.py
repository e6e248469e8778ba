"""The API's caller fixtures, for the API tests of issue 15 that live here."""

from tests.api.conftest import api, robot_client  # noqa: F401
