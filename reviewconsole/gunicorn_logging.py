"""Gunicorn's logger for `make run`: no access line for a static file served fine.

A page load fetches a handful of CSS, JS and image files; logging each buried the lines that
matter (the URL and the demo password `bin/run` prints, a 403, a failed request). Static files
that fail (4xx, 5xx) are still logged, and so is every other request.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from gunicorn.glogging import Logger


def is_quiet(path: str, status: int | None, static_url: str = "/static/") -> bool:
    """Return whether the request is a static file served fine (not worth an access line)."""
    return path.startswith(static_url) and status is not None and status < 400


class QuietStaticLogger(Logger):
    """Gunicorn's logger, minus access lines for static files served fine."""

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        """Log the request unless it is a static file served fine."""
        static_url = "/" + settings.STATIC_URL.lstrip("/")  # workers have loaded the app
        if is_quiet(environ.get("PATH_INFO", ""), getattr(resp, "status_code", None), static_url):
            return
        super().access(resp, req, environ, request_time)
