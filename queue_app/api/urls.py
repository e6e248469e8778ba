"""The JSON API under /api/v1/."""

urlpatterns: list = []
