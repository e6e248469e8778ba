"""The JSON API under /api/v1/, with JSON errors for unknown paths and methods too."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.urls import URLPattern, re_path
from django.views.decorators.csrf import csrf_exempt

from queue_app.api.api import api
from queue_app.api.failures import error_response


def _json_method_not_allowed(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    # ninja answers a wrong method with a plain-text 405; clients get the one error shape.
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if isinstance(response, HttpResponseNotAllowed):
            allowed = response["Allow"]
            response = error_response(
                request,
                405,
                "method_not_allowed",
                f"{request.method} is not allowed here; use {allowed}.",
                {"allowed": allowed.split(", ")},
            )
            response["Allow"] = allowed
        return response

    return wrapper


# Exempt from CSRF like ninja's own views: the API takes no cookies, and a POST or PUT to a path
# it does not have would otherwise get Django's HTML CSRF page instead of the JSON 404.
@csrf_exempt
def _unknown_path(request: HttpRequest, path: str) -> HttpResponse:
    return error_response(request, 404, "not_found", f"No API endpoint at /api/v1/{path}.")


# Included without a namespace argument, so app_name is the namespace ninja reverses in.
app_name = api.urls_namespace
_patterns = api.urls[0]
for _pattern in _patterns:
    if isinstance(_pattern, URLPattern):
        _pattern.callback = _json_method_not_allowed(_pattern.callback)

urlpatterns = [*_patterns, re_path(r"^(?P<path>.*)$", _unknown_path)]
