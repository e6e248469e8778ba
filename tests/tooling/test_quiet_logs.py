"""Quiet, useful logs: an expected 403 is one line, and django-axes' start-up line is gone.

Logging is configured the way Django does it at start-up (its defaults, then settings.LOGGING)
with DEBUG on, as under `make run`, and the handlers' output is read back.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client
from django.utils.log import configure_logging

from reviewconsole.logging_config import build_logging

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def log_output(settings) -> Iterator[Callable[..., io.StringIO]]:
    """Yield a function that configures logging as `make run` does and returns its output."""

    def configure(*, json_logs: bool) -> io.StringIO:
        settings.DEBUG = True
        configure_logging(settings.LOGGING_CONFIG, build_logging(debug=True, json_logs=json_logs))
        stream = io.StringIO()
        # Every handler that writes to the console, wherever Django's defaults or ours put it.
        for logger in (logging.getLogger(), *map(logging.getLogger, ("django", "django.request"))):
            for handler in logger.handlers:
                if isinstance(handler, logging.StreamHandler):
                    handler.setStream(stream)
        return stream

    yield configure
    configure_logging(settings.LOGGING_CONFIG, settings.LOGGING)


def test_a_reviewer_opening_ops_is_one_warning_line_without_a_traceback(alice, log_output):
    output = log_output(json_logs=False)
    client = Client()
    client.force_login(alice)

    response = client.get("/ops/")

    assert response.status_code == 403
    lines = [line for line in output.getvalue().splitlines() if line]
    refusals = [line for line in lines if "/ops/" in line]
    assert len(refusals) == 1, output.getvalue()
    assert "WARNING django.request Forbidden (Permission denied): /ops/" in refusals[0]
    assert "reason=Operations pages are for staff." in refusals[0]
    assert "Traceback" not in output.getvalue()


def test_the_403_is_one_json_line_in_production_format(alice, log_output):
    output = log_output(json_logs=True)
    client = Client()
    client.force_login(alice)

    client.get("/ops/")

    records = [json.loads(line) for line in output.getvalue().splitlines() if "/ops/" in line]
    assert len(records) == 1
    assert records[0]["level"] == "WARNING"
    assert records[0]["status_code"] == 403
    assert records[0]["reason"] == "Operations pages are for staff."
    assert "exc_info" not in records[0] and "request" not in records[0]


def test_a_server_error_keeps_its_traceback(log_output):
    output = log_output(json_logs=False)

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("django.request").error(
            "Internal Server Error: /x", exc_info=True, extra={"status_code": 500}
        )

    assert output.getvalue().count("Traceback") == 1
    assert "RuntimeError: boom" in output.getvalue()


def test_axes_does_not_announce_itself_on_start_up(log_output):
    from axes.apps import AppConfig

    output = log_output(json_logs=False)
    AppConfig.initialized = False
    try:
        AppConfig.initialize()  # what every process that loads Django runs once
    finally:
        AppConfig.initialized = True

    assert "AXES: BEGIN" not in output.getvalue()


def test_a_management_command_prints_no_axes_line():
    # The real chain: settings -> LOGGING -> apps ready, in a process of its own, as under
    # `make run` (migrate, seed_demo, collectstatic, the worker and each web worker).
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env={**os.environ, "DEBUG": "true", "JSON_LOGS": "false"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "AXES" not in result.stderr + result.stdout
