"""What every admin page of the app shares: the site's name, its login form, the read-only base
and the base of the admins that write."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.auth import get_permission_codename
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from queue_app.login import AdminLoginForm
from queue_app.services.access import hold_permission

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


class HeldPermissionAdmin(admin.ModelAdmin):
    """An admin whose writes hold, in the writing transaction, the permission they need.

    Django's admin asks has_add/change/delete_permission at the start of the request, from
    permissions it caches on request.user for the whole request. Each write here asks the
    database again just before it and keeps the answer until commit (hold_permission): a
    permission, group or superuser flag removed meanwhile refuses the write (403, nothing
    changed) instead of slipping past. The admin runs save_form, save_model and save_related
    in one transaction, so the parent's permission is held for its inlines' writes too (their
    own add/change/delete permissions are read as the request cached them). An action is held
    by the permissions it declares, so a writing action must declare one.
    """

    def hold(self, request: HttpRequest, action: str) -> None:
        """Refuse unless request.user still holds `action` ("add", "change", "delete") here."""
        opts = self.opts
        hold_permission(
            user=request.user,
            perm=f"{opts.app_label}.{get_permission_codename(action, opts)}",
            refusal=f"You no longer have permission to {action} {opts.verbose_name_plural}. "
            "Nothing was changed.",
        )

    def save_form(self, request: HttpRequest, form: Any, change: bool) -> Any:
        # The first step of every admin save (the change form's and the changelist's editable
        # rows), inside the transaction Django opens for it, before save_model writes anything
        # (an API client's save creates its service user there).
        self.hold(request, "change" if change else "add")
        return super().save_form(request, form, change)

    def delete_model(self, request: HttpRequest, obj: Model) -> None:
        # The delete page's POST, inside the transaction Django opens for it.
        self.hold(request, "delete")
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        # The site-wide delete_selected action, which Django lists without get_action below
        # and runs outside any transaction.
        with transaction.atomic():
            self.hold(request, "delete")
            super().delete_queryset(request, queryset)

    def get_action(self, action: Any) -> tuple[Callable[..., Any], str, str] | None:
        # Every action of this admin's own runs in one transaction that first holds the
        # permissions it declares (@admin.action(permissions=[...])).
        found = super().get_action(action)
        if found is None:
            return None
        func, name, description = found
        needs = getattr(func, "allowed_permissions", ())

        @functools.wraps(func)
        def held(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
            with transaction.atomic():
                for permission in needs:
                    self.hold(request, permission)
                return func(modeladmin, request, queryset)

        return held, name, description
