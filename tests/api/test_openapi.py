"""The published contract: /api/v1/openapi.json and the docs page."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_schema_documents_every_bound_and_the_error_shape():
    schema = Client().get("/api/v1/openapi.json").json()
    lease = schema["components"]["schemas"]["LeaseRequest"]["properties"]
    assert (lease["batch_size"]["minimum"], lease["batch_size"]["maximum"]) == (1, 200)
    assert (lease["lease_seconds"]["minimum"], lease["lease_seconds"]["maximum"]) == (1, 120)
    assert lease["batch_size"]["default"] == 20
    assert lease["lease_seconds"]["default"] == 30
    item_in = schema["components"]["schemas"]["ItemIn"]["properties"]
    assert item_in["subject"]["maxLength"] == 500
    assert "ErrorOut" in schema["components"]["schemas"]
    decision = schema["paths"]["/api/v1/items/{item_id}/decision"]["post"]["responses"]
    assert {"200", "201", "409", "422"} <= set(decision)
    assert schema["components"]["securitySchemes"]["ApiTokenAuth"]["scheme"] == "bearer"


def test_the_docs_page_is_one_page_with_every_operation_and_no_script():
    schema = Client().get("/api/v1/openapi.json").json()
    html = Client().get("/api/v1/docs").content.decode()
    assert '<html lang="en">' in html
    assert "<script" not in html and "cdn" not in html.lower()
    for item in schema["paths"].values():
        for operation in item.values():
            assert f'id="{operation["operationId"]}"' in html
    # Each named schema has an anchor, and the operations link to their bodies.
    assert 'id="schema-ItemIn"' in html and 'href="#schema-ItemIn"' in html
    assert "length at most 500" in html  # a bound from the schema, in words


def _string_schemas(node, where="$"):
    """Yield (path, schema) for every string schema in the document."""
    if isinstance(node, dict):
        if node.get("type") == "string" and "format" not in node and "enum" not in node:
            yield where, node
        for key, value in node.items():
            yield from _string_schemas(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _string_schemas(value, f"{where}[{i}]")


def test_every_text_field_and_parameter_documents_that_nul_is_refused():
    schema = Client().get("/api/v1/openapi.json").json()
    requests = {
        "paths": schema["paths"],
        "inputs": {
            name: body
            for name, body in schema["components"]["schemas"].items()
            if name in ("ItemIn", "EvidenceIn", "LeaseRequest", "DecisionIn", "ReleaseIn")
        },
    }
    found = [
        (where, string)
        for where, string in _string_schemas(requests)
        if "responses" not in where and "maxLength" in string
    ]
    assert len(found) >= 9  # queue, subject, keys, hashes, reason, note, the slug parameter
    for where, string in found:
        assert "pattern" in string, where
        assert re.fullmatch(string["pattern"].strip("^$"), "nul\x00byte") is None, where


def test_the_refusals_are_described_in_the_responses():
    schema = Client().get("/api/v1/openapi.json").json()
    payload = schema["components"]["schemas"]["ItemIn"]["properties"]["payload"]
    assert "NUL characters in any string or key" in payload["description"]
    assert re.fullmatch(payload["propertyNames"]["pattern"].strip("^$"), "k\x00") is None
    paths = schema["paths"]
    create = paths["/api/v1/items"]["post"]["responses"]["422"]["description"]
    assert "`unknown_queue`" in create
    assert "NUL" in create and 'not true, "5" or 5.0' in create
    decide = paths["/api/v1/items/{item_id}/decision"]["post"]["responses"]["422"]["description"]
    assert "`invalid_reason`" in decide
    for path in paths.values():
        for operation in path.values():
            assert operation["responses"]["422"]["description"].startswith("Refused")
