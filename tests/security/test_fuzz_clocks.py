"""Hostile input to the deadline and hold routes: the hold form, intake's deadline fields and
the subject list. Never a 5xx, never a partial write, always words a person can act on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import event, given, settings
from hypothesis import strategies as st

from queue_app.models import ReviewItem
from tests.security.ledger import rolled_back
from tests.security.strategies import FUZZ, form, form_field, json_field, odd_characters
from tests.security.test_fuzz_api import (  # noqa: F401
    AUTH,
    CONTENT_TYPES,
    body_strategy,
    caller,
    check_answer,
    tally,
)
from tests.security.test_fuzz_console import _post, _said_something, stage  # noqa: F401

pytestmark = pytest.mark.django_db
FIXED = settings(FUZZ, derandomize=True)


def _local(delta: timedelta) -> str:
    return timezone.localtime(timezone.now() + delta).strftime("%Y-%m-%dT%H:%M")


@FIXED
@given(data=st.data())
def test_the_hold_form_survives_hostile_posts(alice_client, world, stage, data):  # noqa: F811
    honest = data.draw(st.sampled_from(["honest", "forged"])) == "honest"
    item_id = world.held.pk if honest else data.draw(st.sampled_from(stage["item_ids"]))
    token = (
        str(world.held.lease_token)
        if honest
        else data.draw(form_field(st.sampled_from(stage["tokens"])))
    )
    reason = data.draw(
        form_field(st.sampled_from(["awaiting_documents", "customer_contacted", "verified", "x"]))
    )
    until = data.draw(
        form_field(
            st.sampled_from(
                [
                    _local(timedelta(hours=2)),
                    _local(timedelta(days=8)),  # past the queue's max hold (7 days)
                    _local(timedelta(hours=-2)),
                    "2026-13-45T25:61",
                    "9999-12-31T23:59",
                    "0001-01-01T00:00",
                    "tomorrow",
                ]
            )
        )
    )
    posted = form(lease_token=token, reason_code=reason, hold_until=until)
    with rolled_back() as change:
        response = _post(alice_client, item_id, "hold", posted)
        held = ReviewItem.objects.filter(pk=world.held.pk, state="held").exists()
    event(f"hold: {response.status_code}{' held' if held else ''}")
    assert response.status_code in (302, 404)
    assert _said_something(response)
    # Only alice's own token on alice's item can put it on hold; nothing else moves, and never
    # a decision.
    own = item_id == world.held.pk and posted.get("lease_token") == str(world.held.lease_token)
    assert change.nothing or (own and held)
    assert change.after.decisions == change.before.decisions


@FIXED
@given(data=st.data())
def test_intake_deadline_fields_survive_hostile_requests(world, caller, data):  # noqa: F811
    honest = {
        "queue": "kyc",
        "subject": "Payment 42",
        "payload": {"amount": "12.50"},
        "idempotency_key": "fuzz-clock-1",
        "source_hash": "sha-1",
        "due_at": "2030-01-01T00:00:00Z",
        "subject_key": "cust-1",
    }
    hostile = {
        "due_at": json_field(
            st.sampled_from(
                [
                    "2030-01-01T00:00:00",
                    "soon",
                    "",
                    1700000000,
                    "9999-99-99T00:00:00Z",
                    None,
                    "2030-01-01T00:00:00+25:00",
                    True,
                    ["2030-01-01T00:00:00Z"],
                ]
            )
        ),
        "sla_seconds": json_field(st.sampled_from([0, -1, 1.5, "60", 10**12, 2**63, True, 60])),
        "subject_key": json_field(
            st.one_of(
                st.sampled_from(["", "k" * 201, "a\x00b", 5, None]),
                st.lists(odd_characters, max_size=20).map("".join),
            )
        ),
    }
    raw, _, _ = data.draw(body_strategy(honest, hostile))
    auth, content_type = data.draw(AUTH), data.draw(CONTENT_TYPES)
    with rolled_back() as change:
        response = caller("POST", "/items", raw, auth=auth, content_type=content_type)
    check_answer(response, change)
    tally(response)
    if response.status_code < 400:
        assert auth == "scoped"
        assert change.after.items - change.before.items == (response.status_code == 201)


@FIXED
@given(data=st.data())
def test_the_subject_list_survives_hostile_queries(world, caller, data):  # noqa: F811
    key = data.draw(
        st.one_of(
            st.sampled_from(["cust-matrix", "", "%", "%00", "k" * 300, "a%00b", "' OR 1=1 --"]),
            st.lists(odd_characters, max_size=12).map("".join),
        )
    )
    limit = data.draw(
        st.sampled_from(
            ["", "&limit=1", "&limit=0", "&limit=101", "&limit=x", "&limit=99999999999999999999"]
        )
    )
    from urllib.parse import quote

    path = f"/items?subject_key={quote(key, safe='%')}{limit}"
    auth = data.draw(AUTH)
    with rolled_back() as change:
        response = caller("GET", path, b"", auth=auth, content_type="")
    body = check_answer(response, change)
    tally(response)
    assert change.nothing
    if response.status_code == 200:
        assert auth == "scoped"
        kyc = {row["queue"] for row in body["items"]}
        assert kyc <= {"kyc"}  # the robot's only queue
