"""Users, groups and second-factor devices in the admin.

Users and groups keep Django's own admins, with every write holding the writer's permission in
its transaction (HeldPermissionAdmin): whoever grants or removes access must still hold the
permission to do so when the write lands, not only when the page was requested.

Second-factor devices are not edited in the admin. django-otp's own device admins would let an
administrator create a device for someone else or read its secret key (and QR code): enough to
pass as them. Enrolment is the user's own (/accounts/mfa/setup/); an administrator only resets
a lost device (/admin/mfa-reset/<id>/, recorded in the access history).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.widgets import AdminSplitDateTime
from django.contrib.auth import admin as auth_admin
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from queue_app.admin.base import HeldPermissionAdmin

for model in (TOTPDevice, StaticDevice):
    if admin.site.is_registered(model):
        admin.site.unregister(model)

for model in (User, Group):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


@admin.register(User)
class UserAdmin(HeldPermissionAdmin, auth_admin.UserAdmin):
    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        # A date and time (last login, date joined) is two boxes under one label, each shown
        # as "Date:" and "Time:" in plain text: give each box a name of its own (axe: label).
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if field is not None and isinstance(field.widget, AdminSplitDateTime):
            date, time = field.widget.widgets
            date.attrs["aria-label"] = f"{field.label}: date"
            time.attrs["aria-label"] = f"{field.label}: time"
        return field

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> HttpResponse:
        # Django's password form saves outside the admin's save path (and its transaction).
        if request.method != "POST":
            return super().user_change_password(request, id, form_url)
        with transaction.atomic():
            self.hold(request, "change")
            return super().user_change_password(request, id, form_url)


@admin.register(Group)
class GroupAdmin(HeldPermissionAdmin, auth_admin.GroupAdmin):
    pass
