"""The permission set the Admins group holds: configure, audit and overturn, never rewrite."""

from __future__ import annotations

from django.contrib.auth.models import Permission
from django.db.models import Q, QuerySet

# Rows only the application writes: items through intake and claims, decisions through the
# services (overturn included: it needs can_overturn, not add_decision), the rest by the worker,
# the triggers and verify_decisions. The admin refuses to add, change or delete them whatever
# the permissions say; leaving the permissions out too keeps the group honest about that.
READ_ONLY_MODELS = (
    "reviewitem",
    "decision",
    "applieddecision",
    "itemevent",
    "chainverification",
    "statementofreasons",
)


def admin_group_permissions() -> QuerySet[Permission]:
    """Return every queue_app permission except writes to records only the application writes."""
    writes = Q()
    for model in READ_ONLY_MODELS:
        writes |= Q(codename__in=[f"{action}_{model}" for action in ("add", "change", "delete")])
    return Permission.objects.filter(content_type__app_label="queue_app").exclude(writes)
