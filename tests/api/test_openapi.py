"""The published contract: /api/v1/openapi.json and the docs page."""

from __future__ import annotations

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


def test_the_docs_page_serves_its_assets_locally():
    html = Client().get("/api/v1/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
