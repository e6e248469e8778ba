"""Django admin for API clients (registered from queue_app.admin)."""
