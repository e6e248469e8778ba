"""The API's JSON on the wire: Decimal in, digit for digit out, never a float in between.

django-ninja parses bodies with json.loads and renders with a float-friendly encoder; a
reconciliation variance of 12345678901234.57 would not survive either. These replace both.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from ninja.parser import Parser
from ninja.renderers import BaseRenderer

from queue_app.jsonutil import ExactDecoder, exact_dumps

MEDIA_TYPE = "application/json"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class ExactParser(Parser):
    """Parse JSON bodies keeping every non-integer number as Decimal (never a float)."""

    def parse_body(self, request: HttpRequest) -> Any:
        # NaN and Infinity are not JSON; the stdlib accepts them unless told otherwise.
        return json.loads(request.body, cls=ExactDecoder, parse_constant=_refuse_constant)


class ExactRenderer(BaseRenderer):
    """Render responses with exact_dumps: Decimal values digit for digit."""

    media_type = MEDIA_TYPE

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> str:
        return exact_dumps(data)
