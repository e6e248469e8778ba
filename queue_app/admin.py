"""Django admin: configuration, read-only audit, and overturns as the only correction."""

from queue_app.api import admin as api_admin  # noqa: F401  (registers ApiClient)
