"""The project's URLs under another path, for tests of what remembers reversed URLs."""

from django.urls import include, path

urlpatterns = [path("moved/", include("reviewconsole.urls"))]
