"""POST /api/v1/items: idempotent intake, exact numbers, bounds and the one error shape."""

from __future__ import annotations

from decimal import Decimal

import pytest

from queue_app.api.schemas import MAX_BODY_BYTES
from queue_app.jsonutil import exact_dumps
from queue_app.models import ItemEvent, ReviewItem
from tests.api.conftest import intake_body
from tests.conftest import make_queue, run_in_threads

pytestmark = pytest.mark.django_db


def test_it_creates_an_item(api, queue):
    reply = api.post(
        "/items", intake_body(priority=5, trace_id="7d0c5f5e-0000-4000-8000-000000000001")
    )
    assert reply.status == 201
    item = ReviewItem.objects.get()
    assert reply.body["id"] == item.pk
    assert (item.queue, item.subject, item.priority, item.source_hash) == (
        queue,
        "Payment 42",
        5,
        "sha-1",
    )
    assert str(item.trace_id) == "7d0c5f5e-0000-4000-8000-000000000001"
    assert reply.body["state"] == "pending"
    assert reply.body["decisions"] == []
    assert ItemEvent.objects.filter(item=item, kind="created").count() == 1


def test_it_returns_the_existing_item_for_a_replayed_key(api):
    first = api.post("/items", intake_body())
    again = api.post("/items", intake_body())
    assert (first.status, again.status) == (201, 200)
    assert again.body["id"] == first.body["id"]
    assert ReviewItem.objects.count() == 1


def test_it_refuses_a_replayed_key_with_different_content_naming_the_conflict(api):
    first = api.post("/items", intake_body())
    reply = api.post("/items", intake_body(source_hash="sha-2"))
    assert reply.status == 409
    assert reply.body["error"]["code"] == "idempotency_conflict"
    assert "upstream-1" in reply.body["error"]["message"]
    assert str(first.body["id"]) in reply.body["error"]["message"]
    assert ReviewItem.objects.count() == 1


def test_it_keeps_payload_numbers_exact_through_the_round_trip(api):
    payload = {
        "variance": Decimal("12345678901234.57"),
        "rate": Decimal("0.10000000000000000000000001"),
        "zero": Decimal("0.00"),
        "big": 123456789012345678901234567890,
        "nested": [{"amount": Decimal("-0.01")}],
    }
    raw = exact_dumps(intake_body(payload=payload)).encode()
    created = api.post("/items", raw=raw)
    assert created.status == 201
    assert created.body["payload"] == payload

    # Digit for digit on the wire, not just equal after parsing.
    fetched = api.http.get(
        f"/api/v1/items/{created.body['id']}", headers=api._headers()
    ).content.decode()
    assert '"variance":12345678901234.57' in fetched
    assert '"rate":0.10000000000000000000000001' in fetched
    assert '"zero":0.00' in fetched
    assert '"big":123456789012345678901234567890' in fetched

    stored = ReviewItem.objects.get().payload
    assert stored["variance"] == Decimal("12345678901234.57")
    assert isinstance(stored["variance"], Decimal)


def test_it_refuses_an_unknown_queue_with_422(api):
    reply = api.post("/items", intake_body(queue="nope"))
    assert reply.status == 422
    assert reply.body["error"]["code"] == "unknown_queue"
    assert "nope" in reply.body["error"]["message"]
    assert not ReviewItem.objects.exists()


def test_it_refuses_a_body_over_the_limit_with_413(api):
    payload = {"blob": "x" * MAX_BODY_BYTES}
    reply = api.post("/items", intake_body(payload=payload))
    assert reply.status == 413
    assert reply.body["error"]["code"] == "payload_too_large"
    assert str(MAX_BODY_BYTES) in reply.body["error"]["message"]
    assert not ReviewItem.objects.exists()


def test_it_accepts_a_body_just_under_the_limit(api):
    body = intake_body(payload={"blob": ""})
    room = MAX_BODY_BYTES - len(exact_dumps(body).encode())
    body["payload"]["blob"] = "x" * room
    assert len(exact_dumps(body).encode()) == MAX_BODY_BYTES
    assert api.post("/items", body).status == 201


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("priority", 1001, "priority: must be between -1000 and 1000"),
        ("priority", -1001, "priority: must be between -1000 and 1000"),
        ("subject", "", "subject: must be between 1 and 500 characters long"),
        ("subject", "s" * 501, "subject: must be between 1 and 500 characters long"),
        ("idempotency_key", "k" * 201, "idempotency_key: must be between 1 and 200"),
        ("source_hash", "", "source_hash: must be between 1 and 128"),
        ("subject", "nul\x00byte", "subject: must not contain NUL"),
        ("payload", {"text": "nul\x00byte"}, "payload: strings must not contain NUL"),
        ("payload", [1, 2], "payload: Input should be a valid dictionary"),
        ("payload", {"n": Decimal("1E+5000")}, "payload: numbers must be finite"),
    ],
)
def test_it_names_the_valid_range_of_a_bad_field(api, field, value, expected):
    reply = api.post("/items", intake_body(**{field: value}))
    assert reply.status == 422
    assert reply.body["error"]["code"] == "invalid"
    assert expected in reply.body["error"]["message"]
    assert reply.body["error"]["details"][0]["field"] == field
    assert not ReviewItem.objects.exists()


OUT_OF_BOUNDS = [
    "1e1000000",  # the item page raised decimal.Overflow formatting it
    "1e999999",  # ... and formatted this as 1.3 million characters
    "-1e1000",
    "1e-1001",
    " 1E+5000 ",
    "1" * 1001,
]


@pytest.mark.parametrize("text", OUT_OF_BOUNDS)
def test_it_holds_numeric_strings_to_the_bounds_of_numbers(api, text):
    reply = api.post("/items", intake_body(payload={"variance_amount": text}))
    assert reply.status == 422
    assert reply.body["error"]["details"] == [
        {
            "field": "payload",
            "type": "number_out_of_range",
            "message": "numbers must be finite with at most 1000 digits either side of the point "
            "(numeric strings too)",
        }
    ]
    assert not ReviewItem.objects.exists()


@pytest.mark.parametrize("text", OUT_OF_BOUNDS)
def test_it_holds_numbers_to_the_same_bounds(api, text):
    raw = exact_dumps(intake_body(payload={"variance_amount": "X"})).replace('"X"', text)
    reply = api.post("/items", raw=raw.encode())
    assert reply.status == 422
    assert reply.body["error"]["details"][0]["type"] == "number_out_of_range"


@pytest.mark.parametrize(
    "text", ["12.50", "-0.01", "1e3", "9" * 1000, "0." + "1" * 1000, "1_000", "Infinity", "1e"]
)
def test_it_keeps_strings_within_bounds_or_not_numbers_at_all(api, text):
    reply = api.post("/items", intake_body(payload={"amount": text}))
    assert reply.status == 201
    assert reply.body["payload"] == {"amount": text}


def test_it_refuses_nan_which_is_not_json(api):
    raw = exact_dumps(intake_body()).replace('"12.50"', "NaN").encode()
    reply = api.post("/items", raw=raw)
    assert reply.status == 400
    assert reply.body["error"] == {
        "code": "bad_request",
        "message": "The request body is not valid JSON.",
        "details": None,
    }


def test_it_refuses_malformed_json_in_the_error_shape(api):
    reply = api.post("/items", raw=b'{"queue": ')
    assert reply.status == 400
    assert reply.body["error"]["code"] == "bad_request"


def test_it_refuses_a_deeply_nested_payload(api):
    nested: dict = {}
    for _ in range(40):
        nested = {"n": nested}
    reply = api.post("/items", intake_body(payload=nested))
    assert reply.status == 422
    assert "nest deeper than 32" in reply.body["error"]["message"]


def test_an_intake_only_client_cannot_lease(queue):
    from tests.api.conftest import caller_for, make_client

    _, token = make_client("pusher", [queue], adjudicate=False)
    reply = caller_for(token).post("/queues/kyc/leases", {})
    assert reply.status == 403
    assert "adjudicate" in reply.body["error"]["message"]


@pytest.mark.django_db(transaction=True)
def test_ten_clients_posting_the_same_key_at_once_create_one_item(queue):
    from tests.api.conftest import caller_for, make_client

    _, token = make_client("pusher", [queue])

    def post(i: int) -> tuple[int, int]:
        reply = caller_for(token).post("/items", intake_body(key="same-key"))
        return reply.status, reply.body["id"]

    results = run_in_threads(10, post)
    assert ReviewItem.objects.count() == 1
    item = ReviewItem.objects.get()
    assert {item_id for _, item_id in results} == {item.pk}
    assert sorted(status for status, _ in results) == [200] * 9 + [201]


@pytest.mark.django_db(transaction=True)
def test_ten_clients_racing_one_key_with_different_content_get_one_item_and_conflicts(queue):
    from tests.api.conftest import caller_for, make_client

    _, token = make_client("pusher", [queue])

    def post(i: int) -> int:
        return (
            caller_for(token)
            .post("/items", intake_body(key="same-key", source_hash=f"h{i}"))
            .status
        )

    statuses = run_in_threads(10, post)
    assert sorted(statuses) == [201] + [409] * 9
    assert ReviewItem.objects.count() == 1


def test_the_same_key_in_another_queue_names_another_item(api, queue):
    other = make_queue("aml")
    api_client = queue.api_clients.get()
    api_client.queues.add(other)
    first = api.post("/items", intake_body())
    reply = api.post("/items", intake_body(queue="aml"))
    # Keys are scoped per queue as well as per client: two requests, two items.
    assert (first.status, reply.status) == (201, 201)
    assert reply.body["id"] != first.body["id"]
    assert reply.body["queue"] == "aml"


@pytest.mark.parametrize("priority", [True, "5", Decimal("5.0"), Decimal("1E+1")])
def test_it_takes_the_priority_only_as_a_json_integer(api, priority):
    reply = api.post("/items", intake_body(priority=priority))
    assert reply.status == 422
    assert reply.body["error"]["details"] == [
        {"field": "priority", "type": "int_type", "message": "Input should be a valid integer"}
    ]
    assert not ReviewItem.objects.exists()
