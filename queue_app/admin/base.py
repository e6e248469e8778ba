"""What every admin page of the app shares: the site's name, its login form, the read-only base."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from queue_app.login import AdminLoginForm

# Admins and operators (/ops/ shares this frame) should see the product's name, not Django's.
admin.site.site_header = "Review Console administration"
admin.site.site_title = "Review Console admin"
admin.site.index_title = "Configuration and audit"
# Over-long or NUL-bearing credentials: the usual wrong-password answer, counted (login.py).
admin.site.login_form = AdminLoginForm


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable by anyone with the view permission; nobody adds, changes or deletes here."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
