"""Failures nobody planned for still leave in the one error shape, never as a traceback."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction
from django.test import Client

from queue_app.evidence_files import NAME_PATTERN
from queue_app.models import ReviewItem
from tests.api.conftest import intake_body
from tests.conftest import make_items


@pytest.mark.django_db
def test_an_unexpected_error_is_a_500_in_the_error_shape_without_a_traceback(api, monkeypatch):
    def explode(**kwargs):
        raise RuntimeError("secret internals")

    # Fault injection at the service boundary (the database itself is real and untouched).
    monkeypatch.setattr("queue_app.services.create_item", explode)
    reply = api.post("/items", intake_body())
    assert reply.status == 500
    assert reply.body["error"]["code"] == "internal_error"
    assert "secret internals" not in str(reply.body)
    assert "Traceback" not in str(reply.body)


@pytest.mark.django_db
def test_an_unknown_path_and_a_wrong_method_answer_in_the_error_shape(api):
    missing = api.get("/nothing-here")
    assert (missing.status, missing.body["error"]["code"]) == (404, "not_found")
    wrong = api.send("DELETE", "/items")
    assert (wrong.status, wrong.body["error"]["code"]) == (405, "method_not_allowed")
    # POST /items, and GET /items?subject_key=; ninja names them in either order
    assert set(wrong.headers["Allow"].split(", ")) == {"POST", "GET"}


@pytest.mark.django_db(transaction=True)
def test_a_row_locked_elsewhere_is_503_busy_rather_than_a_hung_request(api, queue, settings):
    settings.REVIEW_LOCK_TIMEOUT_MS = 200
    [item] = make_items(queue, 1)
    locked, done = threading.Event(), threading.Event()

    def hold_lock() -> None:
        # Another connection holds the item's row lock (a migration, a stuck transaction).
        try:
            with transaction.atomic():
                ReviewItem.objects.select_for_update().get(pk=item.pk)
                locked.set()
                assert done.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(30)
        reply = api.put(f"/items/{item.pk}/evidence", {"payload": {"amount": "1.00"}})
    finally:
        done.set()
        holder.join(30)
    assert reply.status == 503
    assert reply.body["error"]["code"] == "busy"
    assert reply.headers["Retry-After"] == "1"
    assert ReviewItem.objects.get().payload == item.payload


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "get"])
@pytest.mark.parametrize(
    "path",
    ["/api/v1/nothing-here", "/api/v1/items/1/attachments/a/b", "/api/v1/items/1/attachments/../x"],
)
def test_it_answers_every_method_on_an_unknown_api_path_with_the_json_404(
    robot_client, method, path
):
    # A browser-like client that enforces CSRF, as a real server does; a session cookie too.
    http = Client(enforce_csrf_checks=True)
    http.cookies["sessionid"] = "anything"
    body = {} if method == "get" else {"data": b"x", "content_type": "application/octet-stream"}
    for headers in ({}, {"HTTP_AUTHORIZATION": f"Bearer {robot_client[1]}"}):
        reply = getattr(http, method)(path, **body, **headers)
        assert reply["Content-Type"].startswith("application/json"), reply.content[:200]
        assert reply.status_code == 404 and reply.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_it_refuses_a_dot_dot_attachment_name_in_the_error_shape(api, queue):
    item_id = api.post("/items", intake_body()).body["id"]
    reply = api.send("PUT", f"/items/{item_id}/attachments/..", raw=b"x")
    assert reply.status == 422 and "error" in reply.body


@pytest.mark.django_db
def test_the_schema_writes_the_attachment_name_rule_as_a_pattern():
    schema = Client().get("/api/v1/openapi.json").json()
    put = schema["paths"]["/api/v1/items/{item_id}/attachments/{name}"]["put"]
    (name,) = [p for p in put["parameters"] if p["name"] == "name"]
    assert name["schema"]["pattern"] == NAME_PATTERN.pattern
