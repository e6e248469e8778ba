"""Hostile requests to the JSON API: never a 5xx, never a partial write, always the one error shape
with a message a client can act on."""

from __future__ import annotations

import json
import secrets
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from hypothesis import event, given, settings
from hypothesis import strategies as st

from queue_app.api.schemas import MAX_BODY_BYTES
from queue_app.jsonutil import exact_dumps
from queue_app.models import Decision, ReviewItem
from tests.conftest import shown_hash
from tests.security.conftest import World
from tests.security.ledger import Change, rolled_back
from tests.security.strategies import FUZZ, MISSING, json_field, json_value, odd_characters

pytestmark = pytest.mark.django_db


@pytest.fixture
def caller(world: World):
    """Send one API request (method, path, raw body) with a chosen credential."""

    def send(method: str, path: str, body: bytes, *, auth: str, content_type: str) -> Any:
        token = {
            "scoped": world.tokens["api_scoped"],
            "unscoped": world.tokens["api_unscoped"],
            "forged": "rc_" + secrets.token_urlsafe(32),
        }.get(auth)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return Client().generic(
            method, f"/api/v1{path}", data=body, content_type=content_type, headers=headers
        )

    return send


def encode(fields: dict[str, Any], duplicate: tuple[str, Any] | None, mangle: str) -> bytes:
    """Write a body as JSON, or as something that only looks like it."""
    present = {k: v for k, v in fields.items() if v is not MISSING}
    if mangle == "not-json":
        return b"{lease_token: " + secrets.token_bytes(8)
    if mangle == "array":
        return exact_dumps(list(present.values())).encode()
    if mangle == "bad-utf8":
        return exact_dumps(present).encode()[:-1] + b"\xff}"
    if mangle == "nan":
        return b'{"payload": {"x": NaN, "y": Infinity}, "priority": -Infinity}'
    if mangle == "surrogate":
        return b'{"note": "\\ud800", "reason_code": "\\udfff"}'
    text = exact_dumps(present)
    if duplicate is not None:
        # The same key twice: JSON allows it, and the last one wins in every parser we use.
        key, value = duplicate
        text = (
            "{" + json.dumps(key) + ": " + exact_dumps(value) + ("," if present else "") + text[1:]
        )
    return text.encode("utf-8", "surrogatepass")


def body_strategy(honest: dict[str, Any], hostile: dict[str, st.SearchStrategy[Any]]):
    """Honest fields with some spoiled, maybe a duplicated key, maybe not JSON at all."""

    @st.composite
    def build(draw: Any) -> tuple[bytes, set[str], str]:
        spoiled = draw(st.sets(st.sampled_from(sorted(hostile)), max_size=3))
        fields = {k: draw(hostile[k]) if k in spoiled else v for k, v in honest.items()}
        if draw(st.booleans()):
            fields[draw(st.text(max_size=10))] = draw(json_value())  # an unexpected field
        duplicate = None
        if draw(st.booleans()):
            duplicate = (draw(st.sampled_from(sorted(honest))), draw(json_value()))
        mangle = draw(
            st.sampled_from(["json"] * 6 + ["not-json", "array", "bad-utf8", "surrogate", "nan"])
        )
        return encode(fields, duplicate, mangle), spoiled, mangle

    return build()


def check_answer(response: Any, change: Change) -> dict[str, Any]:
    """Every answer is below 500 and JSON; every refusal is the error shape and wrote nothing."""
    assert response.status_code < 500, response.content[:500]
    body = json.loads(response.content)
    if response.status_code >= 400:
        error = body["error"]
        assert error["code"] and isinstance(error["code"], str)
        assert error["message"] and len(error["message"]) > 10
        assert change.nothing, (response.status_code, error)
    return body


def tally(response: Any) -> None:
    """Count answers by status and error code in hypothesis' statistics."""
    body = json.loads(response.content)
    event(f"{response.status_code} {body['error']['code'] if response.status_code >= 400 else ''}")


# The same examples on every run, so what the fuzzing finds it finds every time; the explicit
# cases after the fuzz tests cover the fence whatever the examples are.
FIXED = settings(FUZZ, derandomize=True)

AUTH = st.sampled_from(["scoped", "scoped", "scoped", "unscoped", "forged", "none"])
CONTENT_TYPES = st.sampled_from(["application/json"] * 4 + ["text/plain", ""])


def item_ids(world: World) -> st.SearchStrategy[str]:
    ids = [world.robot_held.pk, world.held.pk, world.pending.pk, world.decision.item_id]
    return st.one_of(
        st.sampled_from([str(i) for i in ids]),
        st.sampled_from(["0", "-1", str(2**63), "9" * 30, "abc", "1.5", "%00", "%E2%80%AE"]),
    )


def _robot_state(world: World) -> tuple[list[tuple[int, str, str]], tuple[str, str | None]]:
    """The robot's decisions (item, token, hash) and its held item's (state, token)."""
    robot = world.robot_held
    written = [
        (item_id, str(token), digest)
        for item_id, token, digest in Decision.objects.filter(reviewer_id=robot.lease_owner_id)
        .order_by("pk")
        .values_list("item_id", "lease_token", "evidence_hash")
    ]
    row = ReviewItem.objects.get(pk=robot.pk)
    return written, (row.state, row.lease_token and str(row.lease_token))


@FIXED
@given(data=st.data())
def test_decision_and_release_survive_hostile_requests(world, caller, data):
    robot = world.robot_held
    honest = {
        "lease_token": str(robot.lease_token),
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": shown_hash(robot),
        "note": "auto",
    }
    tokens = [str(world.held.lease_token), str(uuid.uuid4()), str(robot.lease_token).upper()]
    hostile = {
        "lease_token": json_field(st.sampled_from(tokens)),
        "verdict": json_field(st.sampled_from(["reject", "escalate", "overturn", "APPROVE"])),
        "reason_code": json_field(st.sampled_from(["fraud", "policy_gap", "reviewer_error"])),
        "evidence_hash": json_field(st.sampled_from([shown_hash(world.held), "0" * 64])),
        "note": json_field(st.lists(odd_characters, max_size=20).map("".join)),
    }
    action = data.draw(st.sampled_from(["decision", "release"]))
    raw, _, _ = data.draw(body_strategy(honest, hostile))
    own_item = data.draw(st.sampled_from([True, False]))
    item_id = str(robot.pk) if own_item else data.draw(item_ids(world))
    auth, content_type = data.draw(AUTH), data.draw(CONTENT_TYPES)
    with rolled_back() as change:
        response = caller(
            "POST", f"/items/{item_id}/{action}", raw, auth=auth, content_type=content_type
        )
        written, held = _robot_state(world)  # inside the savepoint, before it rolls back
    check_answer(response, change)
    tally(response)
    if response.status_code < 400:
        assert auth == "scoped" and item_id == str(robot.pk)
        if action == "decision":
            assert response.status_code == 201 and change.one_whole_decision
            # Fenced by the lease the robot holds and the evidence it was given, whatever
            # the body said.
            assert written == [(robot.pk, str(robot.lease_token), shown_hash(robot))]
        else:
            assert change.after.decisions == change.before.decisions
            assert held == ("pending", None)
    else:
        assert written == [] and held == ("leased", str(robot.lease_token))


@FIXED
@given(data=st.data())
def test_hold_survives_hostile_requests(world, caller, data):
    robot = world.robot_held
    soon = timezone.now() + timedelta(hours=1)
    honest = {
        "lease_token": str(robot.lease_token),
        "reason_code": "awaiting_documents",
        "hold_until": soon.isoformat(),
    }
    tokens = [str(world.held.lease_token), str(uuid.uuid4()), str(robot.lease_token).upper()]
    hostile = {
        "lease_token": json_field(st.sampled_from(tokens)),
        "reason_code": json_field(st.sampled_from(["verified", "AWAITING_DOCUMENTS", "docs"])),
        "hold_until": json_field(
            st.sampled_from(
                [
                    soon.replace(tzinfo=None).isoformat(),  # no time zone
                    (timezone.now() - timedelta(hours=1)).isoformat(),
                    (timezone.now() + timedelta(days=8)).isoformat(),  # past max_hold
                    "9999-12-31T23:59:59Z",
                    "2026-02-30T00:00:00Z",
                    "now",
                ]
            )
        ),
    }
    raw, _, _ = data.draw(body_strategy(honest, hostile))
    own_item = data.draw(st.sampled_from([True, False]))
    item_id = str(robot.pk) if own_item else data.draw(item_ids(world))
    auth, content_type = data.draw(AUTH), data.draw(CONTENT_TYPES)
    others_held = _held_except(robot.pk)
    with rolled_back() as change:
        response = caller(
            "POST", f"/items/{item_id}/hold", raw, auth=auth, content_type=content_type
        )
        _, held = _robot_state(world)
        # Nobody else's item is ever put on hold through the robot's calls.
        assert _held_except(robot.pk) == others_held
    check_answer(response, change)
    tally(response)
    if response.status_code < 400:
        assert auth == "scoped" and item_id == str(robot.pk) and response.status_code == 200
        assert held == ("held", None)
        assert change.after.decisions == change.before.decisions
    else:
        assert held == ("leased", str(robot.lease_token))


def _held_except(item_id: int) -> set[int]:
    return set(
        ReviewItem.objects.filter(state="held").exclude(pk=item_id).values_list("pk", flat=True)
    )


@pytest.mark.parametrize("which", ["alices", "random"])
@pytest.mark.parametrize("action", ["decision", "release"])
def test_a_foreign_token_on_the_robots_held_item_is_refused(world, caller, action, which):
    robot = world.robot_held
    token = str(world.held.lease_token) if which == "alices" else str(uuid.uuid4())
    body = {
        "lease_token": token,
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": shown_hash(robot),
    }
    with rolled_back() as change:
        response = caller(
            "POST",
            f"/items/{robot.pk}/{action}",
            exact_dumps(body).encode(),
            auth="scoped",
            content_type="application/json",
        )
    check_answer(response, change)
    assert response.status_code == 409
    assert json.loads(response.content)["error"]["code"] == "stale_lease"


@FIXED
@given(data=st.data())
def test_intake_survives_hostile_requests(world, caller, data):
    honest = {
        "queue": "kyc",
        "subject": "Payment 42",
        "priority": 0,
        "payload": {"amount": "12.50"},
        "idempotency_key": "fuzz-1",
        "source_hash": "sha-1",
    }
    hostile = {
        "queue": json_field(st.sampled_from(["aml", "KYC", "escalation", "nope"])),
        "subject": json_field(st.lists(odd_characters, max_size=20).map("".join)),
        "priority": json_field(st.sampled_from([1000, 1001, -1001, 2**63, 1.5, "1", True])),
        "payload": json_field(
            st.one_of(
                st.dictionaries(st.text(max_size=8), json_value(depth=6), max_size=6),
                st.just({"deep": json.loads("[" * 40 + "]" * 40)}),
            )
        ),
        "idempotency_key": json_field(st.sampled_from(["", "k" * 201, "key-\x00", "fuzz-2"])),
        "source_hash": json_field(st.sampled_from(["sha-2", "s" * 129])),
    }
    raw, _, _ = data.draw(body_strategy(honest, hostile))
    evidence = data.draw(st.sampled_from([False, True]))
    auth, content_type = data.draw(AUTH), data.draw(CONTENT_TYPES)
    if evidence:
        method, path = "PUT", f"/items/{data.draw(item_ids(world))}/evidence"
    else:
        method, path = "POST", "/items"
    with rolled_back() as change:
        response = caller(method, path, raw, auth=auth, content_type=content_type)
    body = check_answer(response, change)
    tally(response)
    if response.status_code < 400:
        assert auth == "scoped"
        assert change.after.decisions == change.before.decisions
        assert change.after.items - change.before.items == (response.status_code == 201)
        assert body["queue"] == "kyc"


@FIXED
@given(data=st.data())
def test_leases_and_reads_survive_hostile_requests(world, caller, data):
    honest = {"batch_size": 2, "lease_seconds": 30}
    bad_numbers = st.sampled_from([0, 201, -1, 121, 2**63, 1.5, "2", None, True, [2], {"n": 2}])
    hostile = {"batch_size": json_field(bad_numbers), "lease_seconds": json_field(bad_numbers)}
    auth, content_type = data.draw(AUTH), data.draw(CONTENT_TYPES)
    if data.draw(st.booleans()):
        raw, _, _ = data.draw(body_strategy(honest, hostile))
        slug = data.draw(st.sampled_from(["kyc", "kyc", "aml", "nope", "%00", "k" * 300]))
        method, path = "POST", f"/queues/{slug}/leases"
    else:
        raw, method, path = b"", "GET", f"/items/{data.draw(item_ids(world))}"
    with rolled_back() as change:
        response = caller(method, path, raw, auth=auth, content_type=content_type)
    check_answer(response, change)
    tally(response)
    assert change.after.decisions == change.before.decisions


def test_an_oversized_body_is_refused_before_it_is_read(world, caller):
    raw = b'{"payload": {"x": "' + b"a" * MAX_BODY_BYTES + b'"}}'
    with rolled_back() as change:
        response = caller("POST", "/items", raw, auth="scoped", content_type="application/json")
    assert response.status_code == 413
    check_answer(response, change)


def test_huge_values_inside_the_limit_get_a_field_message(world, caller):
    body = {
        "queue": "kyc",
        "subject": "s" * 200_000,
        "payload": {},
        "idempotency_key": "k",
        "source_hash": "h",
    }
    with rolled_back() as change:
        response = caller(
            "POST",
            "/items",
            exact_dumps(body).encode(),
            auth="scoped",
            content_type="application/json",
        )
    assert response.status_code == 422
    assert "subject" in check_answer(response, change)["error"]["message"]
