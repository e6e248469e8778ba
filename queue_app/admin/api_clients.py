"""Django admin for API clients (registered from queue_app.admin).

Creating a client issues its token and shows it on the response page, once: only its sha256 is
stored, and the page is rendered directly rather than after a redirect, so the token never
passes through a message cookie or the session. Clients are revoked, never deleted: their
service user owns leases and decisions that must keep naming a principal.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.template.response import TemplateResponse
from django.utils import timezone

from queue_app.admin.base import HeldPermissionAdmin
from queue_app.api.auth import (
    new_service_user,
    new_token,
    service_username,
    service_username_taken,
    token_fields,
)
from queue_app.datetimes import local_text
from queue_app.models import ApiClient

TOKEN_ONCE = """{% extends "admin/base_site.html" %}{% load static %}
{% block extrastyle %}{{ block.super }}
<link rel="stylesheet" href="{% static 'reviewadmin/admin.css' %}">{% endblock %}
{% block content %}
<h1>API client “{{ client.name }}” created</h1>
<p>This is its token. <strong>It is shown only this once</strong>: copy it into the client's
secret store now. Only a hash is kept; a lost token cannot be recovered, only replaced by
creating a new client and revoking this one.</p>
<p><code id="api-token">{{ token }}</code></p>
<p>Use it as <code>Authorization: Bearer &lt;token&gt;</code> on /api/v1/.</p>
<p><a href="{{ change_url }}">Continue to the client</a></p>
{% endblock %}
"""


class ApiClientForm(forms.ModelForm):
    class Meta:
        model = ApiClient
        fields = ["name", "can_intake", "can_adjudicate", "queues"]
        widgets = {"queues": forms.CheckboxSelectMultiple}

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        # A new client gets a service user named after it; that name must still be free.
        if self.instance.pk is None and service_username_taken(name):
            raise forms.ValidationError(
                f"A user named {service_username(name)!r} already exists; choose another name."
            )
        return name


@admin.register(ApiClient)
class ApiClientAdmin(HeldPermissionAdmin):
    form = ApiClientForm
    list_display = (
        "name",
        "token_prefix",
        "can_intake",
        "can_adjudicate",
        "queue_list",
        "last_used_at",
        "status",
    )
    list_filter = ("can_intake", "can_adjudicate", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "token_prefix")
    readonly_fields = (
        "token_prefix",
        "user",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    actions = ["revoke"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiClient]:
        return super().get_queryset(request).prefetch_related("queues")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return self.readonly_fields if obj is not None else ()

    # The stubs type the result as a list of str-or-group: invariant, so list[str] is refused.
    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:  # type: ignore[override]
        fields = ["name", "can_intake", "can_adjudicate", "queues"]
        return fields + list(self.readonly_fields) if obj is not None else fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="queues")
    def queue_list(self, obj: ApiClient) -> str:
        return ", ".join(q.slug for q in obj.queues.all()) or "—"

    @admin.display(description="status")
    def status(self, obj: ApiClient) -> str:
        return f"revoked {local_text(obj.revoked_at)}" if obj.revoked_at else "active"

    @transaction.atomic
    def save_model(self, request: HttpRequest, obj: ApiClient, form: Any, change: bool) -> None:
        if not change:
            token = new_token()
            obj.user = new_service_user(obj.name)
            # The creator holds the token: under four eyes the client's decisions are theirs.
            obj.created_by = cast(User, request.user)  # the admin signs everyone in first
            obj.token_prefix, obj.token_hash = token_fields(token)
            # Kept on the instance only until response_add renders it; never stored.
            obj._plain_token = token  # type: ignore[attr-defined]  # not a field
        super().save_model(request, obj, form, change)

    def response_add(
        self, request: HttpRequest, obj: ApiClient, post_url_continue: str | None = None
    ) -> HttpResponse:
        token = getattr(obj, "_plain_token", None)
        if token is None:
            return super().response_add(request, obj, post_url_continue)
        template = engines["django"].from_string(TOKEN_ONCE)
        context = {
            **self.admin_site.each_context(request),
            "title": "API client created",
            "client": obj,
            "token": token,
            "change_url": f"../{obj.pk}/change/",
        }
        # Admin views are never_cache (Cache-Control: no-store), which this page, holding a
        # secret, relies on.
        return TemplateResponse(request, template, context)

    @admin.action(
        description="Revoke selected API clients (their tokens stop working)",
        permissions=["change"],
    )
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiClient]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} API client(s).", messages.SUCCESS)
