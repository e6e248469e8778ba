"""URL configuration: the console, operations pages, the API and Django admin."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include("queue_app.api.urls")),
    path("", include("queue_app.ops.urls")),
    path("", include("queue_app.urls")),
]
