"""List filters for the admin: the buckets a person would pick (lease count, age, status)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone


class RetiredFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "Active"), ("retired", "Retired")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "active":
            return queryset.filter(retired_at__isnull=True)
        if self.value() == "retired":
            return queryset.filter(retired_at__isnull=False)
        return queryset


class LeaseCountFilter(admin.SimpleListFilter):
    title = "times leased"
    parameter_name = "leases"
    BUCKETS = {"0": (0, 0), "1": (1, 1), "2-3": (2, 3), "4+": (4, None)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(key, key) for key in self.BUCKETS]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value is None or value not in self.BUCKETS:
            return queryset
        low, high = self.BUCKETS[value]
        queryset = queryset.filter(lease_count__gte=low)
        return queryset if high is None else queryset.filter(lease_count__lte=high)


class AgeFilter(admin.SimpleListFilter):
    title = "age"
    parameter_name = "age"
    BUCKETS = {
        "1h": ("Under an hour", timedelta(0), timedelta(hours=1)),
        "1d": ("1 hour to 1 day", timedelta(hours=1), timedelta(days=1)),
        "7d": ("1 to 7 days", timedelta(days=1), timedelta(days=7)),
        "old": ("Older than 7 days", timedelta(days=7), None),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(key, label) for key, (label, _, _) in self.BUCKETS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value is None or value not in self.BUCKETS:
            return queryset
        _, younger, older = self.BUCKETS[value]
        now = timezone.now()
        queryset = queryset.filter(created_at__lte=now - younger)
        return queryset if older is None else queryset.filter(created_at__gt=now - older)


class AppliedFilter(admin.SimpleListFilter):
    title = "applied"
    parameter_name = "applied"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Applied"), ("no", "Not applied yet")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(applied__isnull=False)
        if self.value() == "no":
            return queryset.filter(applied__isnull=True)
        return queryset


class JobStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("dead", "Dead (gave up)"), ("waiting", "Waiting or retrying"), ("done", "Done")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "dead":
            return queryset.filter(dead=True, done_at__isnull=True)
        if self.value() == "waiting":
            return queryset.filter(dead=False, done_at__isnull=True)
        if self.value() == "done":
            return queryset.filter(done_at__isnull=False)
        return queryset
