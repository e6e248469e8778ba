"""The transparency report as files: /ops/transparency.csv and /ops/transparency.json.

The figures are queue_app/selectors/transparency_report.py's; here the period is read from the
query (`?from=YYYY-MM-DD&to=YYYY-MM-DD`, both included; this year so far without them) and the
report served, with the dashboard's permission (staff), as the oversight export is.
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from queue_app.selectors.transparency_report import (
    PeriodError,
    default_period,
    export_csv,
    export_json,
    parse_period,
    read_transparency_report,
)
from reviewconsole.routers import replica_reads


@login_required
@never_cache
@require_GET
def transparency_export(request: HttpRequest, fmt: str) -> HttpResponse:
    """Serve the transparency report of a period as a CSV or JSON file, to whoever may see /ops/."""
    if not (request.user.is_active and request.user.is_staff):
        raise PermissionDenied("Operations pages are for staff.")
    given = {key: request.GET.get(key) for key in ("from", "to")}
    try:
        if given["from"] is None and given["to"] is None:
            period = default_period()
        else:
            period = parse_period(given["from"], given["to"])
    except PeriodError as exc:
        return HttpResponseBadRequest(
            f"{exc}\nAsk for /ops/transparency.{fmt}?from=YYYY-MM-DD&to=YYYY-MM-DD.\n",
            content_type="text/plain; charset=utf-8",
        )
    with replica_reads():
        report = read_transparency_report(period)
    if fmt == "csv":
        response = HttpResponse(export_csv(report), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(
            json.dumps(export_json(report), indent=2) + "\n",
            content_type="application/json; charset=utf-8",
        )
    name = f"transparency-{period.first.isoformat()}-{period.last.isoformat()}.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
