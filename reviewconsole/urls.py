"""URL configuration: the console, operations pages, the API and Django admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from queue_app.identity import history_views, oidc
from queue_app.identity import views as identity_views

# Not django.contrib.auth.urls: its password-reset pages mail a link, and this deployment sends
# no mail (a reset POST would fail). A forgotten password is reset by an admin.
accounts = [
    path("login/", identity_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("mfa/", identity_views.mfa_verify, name="mfa-verify"),
    path("mfa/setup/", identity_views.mfa_setup, name="mfa-setup"),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
]

# A database error raised in a middleware (outside any view) gets the friendly 503 too.
handler500 = "queue_app.error_middleware.server_error"

# Single sign-on (mozilla-django-oidc's three views; 404 while OIDC_ISSUER is unset).
oidc_urls = [
    path("callback/", oidc.SignOnCallback.as_view(), name="oidc_authentication_callback"),
    path("authenticate/", oidc.SignOnStart.as_view(), name="oidc_authentication_init"),
    path("logout/", oidc.SignOnLogout.as_view(), name="oidc_logout"),
]

urlpatterns = [
    # Access history: read-only admin pages (queue_app/identity/history_views.py).
    path(
        "admin/access-history/",
        admin.site.admin_view(history_views.access_history),
        name="access-history",
    ),
    path(
        "admin/access-history.csv",
        admin.site.admin_view(history_views.access_history_csv),
        name="access-history-csv",
    ),
    path(
        "admin/mfa-reset/<int:user_id>/",
        admin.site.admin_view(history_views.reset_second_factor_view),
        name="mfa-reset",
    ),
    path("admin/", admin.site.urls),
    path("oidc/", include(oidc_urls)),
    path("accounts/", include(accounts)),
    path("api/v1/", include("queue_app.api.urls")),
    path("", include("queue_app.ops.urls")),
    path("", include("queue_app.urls")),
]
