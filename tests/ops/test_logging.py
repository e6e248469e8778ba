"""Log lines carry trace_id, item_id, decision_id, queue and reviewer in both formats."""

from __future__ import annotations

import io
import json
import logging
import logging.config

import pytest

from reviewconsole.logging_config import build_logging

CONTEXT = {
    "trace_id": "0f8c6d1e-2b7a-4c55-9d3e-8a1f2b3c4d5e",
    "item_id": 41,
    "decision_id": 7,
    "queue": "kyc",
    "reviewer": 3,
}


def emit(*, json_logs: bool, **extra: object) -> str:
    config = build_logging(debug=not json_logs, json_logs=json_logs)
    formatter_config = dict(config["formatters"]["json" if json_logs else "plain"])
    factory = formatter_config.pop("()")
    module, _, name = factory.rpartition(".")
    formatter = getattr(__import__(module, fromlist=[name]), name)(**formatter_config)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    logger = logging.getLogger("tests.ops.logging")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("item auto-escalated", extra=extra)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue().strip()


def test_production_lines_are_json_with_the_context_fields():
    record = json.loads(emit(json_logs=True, **CONTEXT, lease_count=3))

    assert record["message"] == "item auto-escalated"
    assert record["level"] == "WARNING"
    assert {key: record[key] for key in CONTEXT} == CONTEXT
    assert record["lease_count"] == 3


def test_development_lines_are_readable_with_the_context_fields_first():
    line = emit(json_logs=False, lease_count=3, **CONTEXT)

    assert "WARNING tests.ops.logging item auto-escalated [" in line
    assert line.endswith(
        "[trace_id=0f8c6d1e-2b7a-4c55-9d3e-8a1f2b3c4d5e item_id=41 decision_id=7 queue=kyc "
        "reviewer=3 lease_count=3]"
    )


def test_development_lines_without_context_stay_plain():
    assert emit(json_logs=False).endswith("item auto-escalated")


@pytest.mark.parametrize("json_logs", [True, False])
def test_the_configuration_loads_in_both_modes(json_logs, settings):
    try:
        logging.config.dictConfig(build_logging(debug=not json_logs, json_logs=json_logs))
        handler = logging.getLogger().handlers[0]
        assert type(handler.formatter).__name__ == (
            "JsonFormatter" if json_logs else "ReadableFormatter"
        )
    finally:
        logging.config.dictConfig(settings.LOGGING)
