"""The /ops/ section "Oversight of machine suggestions" and its export (CSV, JSON).

The figures are queue_app/selectors/oversight.py's; here they are only formatted for the page
(templates/ops/_oversight.html) and served as files, with the dashboard's permission (staff).
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from queue_app.second_person import Rate
from queue_app.selectors.oversight import (
    OversightFigures,
    QueueOversight,
    export_csv,
    export_json,
    read_oversight,
)
from reviewconsole.routers import replica_reads


def _percent(rate: Rate) -> str:
    return "—" if rate.value is None else f"{rate.value:.0%}"


def _interval(rate: Rate) -> str:
    interval = rate.interval
    return "" if interval is None else f"{interval[0]:.0%} to {interval[1]:.0%}"


def _points(value: float | None) -> str:
    # A gap between two rates, in percentage points, signed.
    return "—" if value is None else f"{value * 100:+.0f} pts"


def _queue_panel(q: QueueOversight) -> dict[str, Any]:
    gap_interval = q.bias.gap_interval
    return {
        "slug": q.slug,
        "name": q.name,
        "bands": [
            {
                "label": b.label.replace("-", " to "),
                "n": b.followed.n,
                "followed": _percent(b.followed),
                "followed_ci": _interval(b.followed),
                "overridden": _percent(b.overridden),
                "overridden_ci": _interval(b.overridden),
            }
            for b in q.calibration
        ],
        "seen_n": q.bias.seen.n,
        "seen": _percent(q.bias.seen),
        "seen_ci": _interval(q.bias.seen),
        "unseen_n": q.bias.unseen.n,
        "unseen": _percent(q.bias.unseen),
        "unseen_ci": _interval(q.bias.unseen),
        "gap": _points(q.bias.gap),
        "gap_ci": ""
        if gap_interval is None
        else f"{_points(gap_interval[0])} to {_points(gap_interval[1])}",
        # Below zero at the low end: the gap may be chance; above: people follow what they see.
        "gap_clear": gap_interval is not None and gap_interval[0] > 0,
        "automatic": q.automatic,
        "qa_n": q.automatic_qa.n,
        "qa": _percent(q.automatic_qa),
        "qa_ci": _interval(q.automatic_qa),
        "team_n": q.team.n,
        "team": _percent(q.team),
        "team_ci": _interval(q.team),
        "reviewers": [
            {
                "reviewer": r.reviewer,
                "n": r.followed.n,
                "followed": _percent(r.followed),
                "followed_ci": _interval(r.followed),
            }
            for r in q.reviewers
        ],
    }


def oversight_context() -> dict[str, object]:
    """The oversight section of /ops/ (templates/ops/_oversight.html)."""
    with replica_reads():
        figures: OversightFigures = read_oversight()
    panels = [_queue_panel(q) for q in figures.queues]
    if len(figures.queues) > 1:
        panels.append(_queue_panel(figures.all))
    return {"oversight_panels": panels, "oversight_window_days": figures.window.days}


@login_required
@never_cache
@require_GET
def oversight_export(request: HttpRequest, fmt: str) -> HttpResponse:
    """Serve the oversight figures as a CSV or JSON file, to whoever may see /ops/."""
    if not (request.user.is_active and request.user.is_staff):
        raise PermissionDenied("Operations pages are for staff.")
    with replica_reads():
        figures = read_oversight()
    if fmt == "csv":
        response = HttpResponse(export_csv(figures), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(
            json.dumps(export_json(figures), indent=2) + "\n",
            content_type="application/json; charset=utf-8",
        )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="oversight-{stamp}.{fmt}"'
    return response
