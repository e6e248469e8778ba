"""Django admin: configuration, read-only audit, and overturns as the only correction.

Django's autodiscovery imports this package; each module registers the admin of one part of
the app. API clients come first, as they did when they lived beside the API.
"""

from queue_app.admin import (  # noqa: F401
    api_clients,
    appeals,
    base,
    config,
    decisions,
    identity,
    items,
    outbox,
    statements,
)
