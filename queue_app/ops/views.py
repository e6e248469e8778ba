"""Operator pages: the /ops/ dashboard (staff), /metrics (Prometheus) and /healthz."""

from __future__ import annotations

import hmac
import logging
from datetime import timedelta

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError, connection
from django.db.migrations.loader import MigrationLoader
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from queue_app.datetimes import zone_abbreviation
from queue_app.ops.automation import automation_context
from queue_app.ops.charts import Bar, bar_chart, share_bar
from queue_app.ops.metrics import exposition
from queue_app.ops.oversight import oversight_context
from queue_app.selectors.appeal_figures import read_appeal_figures
from queue_app.selectors.deadline_figures import SLA_WINDOW_HOURS, read_sla, sla_rows
from queue_app.selectors.lane_figures import agreement_rows, read_lane_figures, reviewer_rows
from queue_app.selectors.queue_figures import (
    LEASE_LEAK_RATIO,
    MIN_SAMPLES_FOR_TTL,
    TTL_HEADROOM,
    OpsSnapshot,
    QueueFigures,
    read_snapshot,
)
from queue_app.selectors.replication import replication_status
from queue_app.selectors.statement_figures import read_statement_figures
from queue_app.services import retry_effect_jobs
from queue_app.services.access import may_see_operations
from reviewconsole.routers import replica_reads

logger = logging.getLogger("queue_app.ops")


def _require_staff(request: HttpRequest) -> None:
    # login_required has already sent anonymous visitors to the login page.
    if not may_see_operations(user=request.user):
        raise PermissionDenied("Operations pages are for staff.")


def human_duration(value: timedelta | None) -> str:
    """Return a duration the way an operator says it: 38s, 4m 12s, 2h 03m, 3d 4h."""
    if value is None:
        return "n/a"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s" if seconds else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def _queue_panel(figures: QueueFigures) -> dict[str, object]:
    threshold = figures.escalation_threshold
    histogram = bar_chart(
        title=f"{figures.name}: open items by times leased",
        bars=[
            Bar(label, count, "bar--warn" if index >= threshold else "")
            for index, (label, count) in enumerate(
                zip(figures.histogram_labels, figures.lease_histogram, strict=True)
            )
        ],
        width=300,
    )
    per_hour = bar_chart(
        title=f"{figures.name}: decisions per hour",
        # Hours in the viewer's zone, as every other time on the page.
        bars=[
            Bar(f"{timezone.localtime(hour):%H}", count)
            for hour, count in figures.decisions_per_hour
        ],
        width=560,
        label_every=3,
    )
    shares = [
        (verdict, [(share, share_bar(share=share.share)) for share in rows])
        for verdict, rows in sorted(figures.reason_shares.items())
    ]
    return {
        "f": figures,
        "histogram": histogram,
        "per_hour": per_hour,
        "shares": shares,
        "oldest_pending": human_duration(figures.oldest_pending_age),
        "p50": human_duration(figures.ttd_p50),
        "p90": human_duration(figures.ttd_p90),
        "p99": human_duration(figures.ttd_p99),
        "lease_ttl": human_duration(figures.lease_ttl),
        "suggested_ttl": human_duration(figures.suggested_lease_ttl),
        "oldest_unapplied": human_duration(figures.oldest_unapplied_age),
        "in_flight_pct": round(figures.in_flight_ratio * 100),
        "in_flight_high": figures.in_flight_ratio >= LEASE_LEAK_RATIO,
        "meter_high": figures.max_in_flight * LEASE_LEAK_RATIO,
    }


@login_required
@never_cache
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    """Show every queue's health: backlog, abandonment, throughput, handling time, apply lag."""
    _require_staff(request)
    # Aggregates over many rows that tolerate seconds of lag: the replica's, if there is one.
    with replica_reads():
        snapshot: OpsSnapshot = read_snapshot()
        sla = read_sla()  # deadlines and holds
    context = {
        **admin.site.each_context(request),
        "is_nav_sidebar_enabled": False,
        "title": "Operations",
        "snapshot": snapshot,
        "panels": [_queue_panel(f) for f in snapshot.queues],
        "overdue_queues": [f for f in snapshot.queues if f.unapplied_overdue],
        "blocked": [
            {"b": b, "waiting_for": human_duration(b.waiting_for)} for b in snapshot.blocked
        ],
        "alert_minutes": int(snapshot.unapplied_alert_after.total_seconds() // 60),
        "min_samples": MIN_SAMPLES_FOR_TTL,
        "headroom": TTL_HEADROOM,
        "zone": zone_abbreviation(),
        "sla_rows": sla_rows(sla),
        "sla_window_hours": SLA_WINDOW_HOURS,
        "replication": replication_status(),  # templates/ops/_replication.html
        **lane_context(),
        **automation_context(request),
        **oversight_context(),  # machine suggestions (templates/ops/_oversight.html)
        "statement_figures": read_statement_figures(),
        "appeal_figures": read_appeal_figures(),  # templates/ops/_appeals.html
    }
    return render(request, "ops/dashboard.html", context)


def lane_context() -> dict[str, object]:
    """The second-person lanes panel (templates/ops/_lanes.html)."""
    with replica_reads():
        lanes = read_lane_figures()
    return {
        "lanes": lanes,
        "lane_window_days": lanes.window.days,
        "agreement_rows": agreement_rows(lanes),
        "reviewer_rows": reviewer_rows(lanes),
    }


@login_required
@require_POST
def retry_dead_job(request: HttpRequest, decision_id: int) -> HttpResponse:
    """Put a dead effect job back in line for the apply worker, then return to the dashboard."""
    _require_staff(request)
    # The same permission the admin's Retry action needs: watching the dashboard is not enough
    # to re-send a webhook.
    if not request.user.has_perm("queue_app.change_effectjob"):
        raise PermissionDenied("Retrying an effect job needs the change effect job permission.")
    if retry_effect_jobs(decision_ids=[decision_id], operator=request.user):
        messages.success(request, f"Decision {decision_id}'s effect will be retried.")
    else:
        messages.warning(
            request, f"Decision {decision_id} has no dead effect job (retried or applied already)."
        )
    return redirect("ops:dashboard")


def _metrics_authorised(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    if not token:
        # No token configured: /metrics is meant for the internal network only (README).
        return True
    presented = request.headers.get("Authorization", "")
    return hmac.compare_digest(presented.encode(), f"Bearer {token}".encode())


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Serve the operator figures in the Prometheus exposition format."""
    if not _metrics_authorised(request):
        response = HttpResponse("A valid bearer token is required.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    with replica_reads():
        body, content_type = exposition(accept=request.headers.get("Accept", ""))
    return HttpResponse(body, content_type=content_type)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer 200 when the database answers and every migration is applied, 503 otherwise."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        loader = MigrationLoader(connection)
        # Every known migration must be recorded, not just the leaves: a plan towards the leaf
        # nodes misses a gap below an applied leaf (an old backup restored under new code).
        unapplied = sorted(set(loader.graph.nodes) - set(loader.applied_migrations))
    except DatabaseError as exc:
        logger.error("health check: database unavailable", extra={"error": str(exc)})
        return JsonResponse({"status": "unavailable", "reason": "database"}, status=503)
    if unapplied:
        names = [f"{app}.{name}" for app, name in unapplied]
        return JsonResponse(
            {"status": "unavailable", "reason": "migrations", "unapplied": names}, status=503
        )
    return JsonResponse({"status": "ok"})
