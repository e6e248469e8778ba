"""URL configuration: the console, operations pages, the API and Django admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from queue_app.login import LoginForm

# Not django.contrib.auth.urls: its password-reset pages mail a link, and this deployment sends
# no mail (a reset POST would fail). A forgotten password is reset by an admin.
accounts = [
    path("login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
]

# A database error raised in a middleware (outside any view) gets the friendly 503 too.
handler500 = "queue_app.middleware.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(accounts)),
    path("api/v1/", include("queue_app.api.urls")),
    path("", include("queue_app.ops.urls")),
    path("", include("queue_app.urls")),
]
