"""Hostile posts to the decision form and the renew/release endpoints: never a 5xx, never a partial
write, always words a reviewer can act on."""

from __future__ import annotations

import uuid

import pytest
from axes.models import AccessAttempt
from django.contrib.messages import get_messages
from django.test import Client
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from queue_app.console.views import NO_SUCH_ITEM
from queue_app.models import Decision
from queue_app.services import claim_next
from tests.conftest import shown_hash
from tests.security.conftest import World
from tests.security.ledger import rolled_back
from tests.security.strategies import FUZZ, MISSING, form, form_field

pytestmark = pytest.mark.django_db

DECISION_FIELDS = ["lease_token", "evidence_hash", "queue", "verdict", "reason_code", "note"]
REASONS = ["verified", "within_tolerance", "fraud", "document_expired", "policy_gap"]
# The same examples on every run: a regression the fuzzing can find is found every time, not in
# some runs (a forged token on the held item was drawn in about 4 runs of 10). The explicit
# cases below cover the fence whatever the examples are.
FIXED = settings(FUZZ, derandomize=True)


@pytest.fixture
def stage(world: World, bob, queue) -> dict[str, object]:
    """Alice holds `held`; bob holds another item: tokens to forge with."""
    bobs = claim_next(queue=queue, reviewer=bob)
    return {
        "item_ids": [world.held.pk, bobs.pk, world.pending.pk, 999_999, 2**63, 10**30],
        "tokens": [
            str(world.held.lease_token),
            str(bobs.lease_token),
            str(world.robot_held.lease_token),
            str(uuid.uuid4()),
        ],
        "hashes": [shown_hash(world.held), shown_hash(bobs), "0" * 64, "F" * 64],
        # The item's own queue, the queues of the other items, ids no queue has, non-ids.
        "queues": [
            *sorted({str(i.queue_id) for i in (world.held, bobs, world.robot_held, world.pending)}),
            *["0", "-1", "999999", str(2**63), "1e3", " 1"],
        ],
    }


def _said_something(response) -> bool:
    if get_messages(response.wsgi_request):
        return True
    page = response.content.decode(errors="replace")
    return NO_SUCH_ITEM in page or "errorlist" in page or "errornote" in page


def _post(client: Client, item_id: int, action: str, data: dict, **headers: str):
    client.cookies.pop("messages", None)  # judge each answer by its own message
    return client.post(f"/items/{item_id}/{action}/", data, headers=headers)


def _writes_by(reviewer_id: int) -> list[tuple[int, str, str]]:
    return [
        (item_id, str(token), digest)
        for item_id, token, digest in Decision.objects.filter(reviewer_id=reviewer_id)
        .order_by("pk")
        .values_list("item_id", "lease_token", "evidence_hash")
    ]


@FIXED
@given(data=st.data())
def test_the_decision_form_survives_hostile_posts(alice_client, world, stage, data):
    # Start from the post the page would send and spoil some of it (none, now and then).
    spoiled = data.draw(st.sets(st.sampled_from([*DECISION_FIELDS, "item"]), max_size=3))
    honest = {
        "lease_token": str(world.held.lease_token),
        "evidence_hash": shown_hash(world.held),
        "queue": str(world.held.queue_id),
        "verdict": "approve",
        "reason_code": "verified",
        "note": "checked the passport",
    }
    hostile = {
        "lease_token": form_field(st.sampled_from(stage["tokens"])),
        "evidence_hash": form_field(st.sampled_from(stage["hashes"])),
        "queue": form_field(st.sampled_from(stage["queues"])),
        "verdict": form_field(st.sampled_from(["approve", "reject", "escalate", "overturn"])),
        "reason_code": form_field(st.sampled_from(REASONS)),
        "note": form_field(st.just("")),
    }
    posted = form(
        **{f: data.draw(hostile[f]) if f in spoiled else honest[f] for f in DECISION_FIELDS}
    )
    item_id = data.draw(st.sampled_from(stage["item_ids"])) if "item" in spoiled else world.held.pk
    alice = world.users["reviewer"]
    with rolled_back() as change:
        response = _post(alice_client, item_id, "decide", posted)
        written = _writes_by(alice.pk)  # inside the savepoint, before it rolls back
    event(f"decide: {response.status_code}{' wrote' if not change.nothing else ''}")
    assert response.status_code < 500
    assert response.status_code in (200, 302, 400, 404)
    if change.nothing:
        assert response.status_code != 200 or b"errorlist" in response.content
        assert _said_something(response), (response.status_code, posted)
        return
    # Something was written: it must be one whole decision on alice's item, and said so.
    assert item_id == world.held.pk and change.one_whole_decision, posted
    # ... fenced by the lease alice holds and the evidence she was shown, whatever was posted.
    assert written == [(world.held.pk, str(world.held.lease_token), shown_hash(world.held))], posted
    assert response.status_code == 302
    assert any("Recorded" in str(m) for m in get_messages(response.wsgi_request))


@FIXED
@given(data=st.data())
def test_renew_and_release_survive_hostile_posts(alice_client, world, stage, data):
    honest = data.draw(st.sampled_from(["honest", "forged"])) == "honest"
    item_id = world.held.pk if honest else data.draw(st.sampled_from(stage["item_ids"]))
    action = data.draw(st.sampled_from(["renew", "release"]))
    wants_json = data.draw(st.booleans())
    token = form_field(st.sampled_from(stage["tokens"]))
    posted = form(lease_token=str(world.held.lease_token) if honest else data.draw(token))
    headers = {"Accept": "application/json"} if wants_json else {}
    with rolled_back() as change:
        response = _post(alice_client, item_id, action, posted, **headers)
    event(f"{action}: {response.status_code}{' wrote' if not change.nothing else ''}")
    assert response.status_code < 500
    sent = posted.get("lease_token")
    effective = sent[-1] if isinstance(sent, list) else sent  # Django reads the last of repeats
    own = item_id == world.held.pk and effective == str(world.held.lease_token)
    if action == "renew" and wants_json:
        body = response.json()
        assert body["ok"] is own
        assert own or body["message"]
    else:
        assert response.status_code in (302, 404)
        assert _said_something(response)
    # Only alice's own token on alice's item moves anything; never a decision.
    assert change.nothing or own
    assert change.after.decisions == change.before.decisions


# -- the fence, example by example: every foreign token on the item alice holds -------------------

FOREIGN_TOKENS = ["bobs", "robots", "random"]


def _foreign(stage: dict[str, object], which: str) -> str:
    return stage["tokens"][1 + FOREIGN_TOKENS.index(which)]


@pytest.mark.parametrize("which", FOREIGN_TOKENS)
def test_the_decision_form_refuses_a_foreign_token_on_the_held_item(
    alice_client, world, stage, which
):
    posted = {
        "lease_token": _foreign(stage, which),
        "evidence_hash": shown_hash(world.held),
        "queue": str(world.held.queue_id),
        "verdict": "approve",
        "reason_code": "verified",
        "note": "",
    }
    with rolled_back() as change:
        response = _post(alice_client, world.held.pk, "decide", posted)
    assert change.nothing
    assert response.status_code == 302
    assert any(
        "Nothing from this page was recorded" in str(m) for m in get_messages(response.wsgi_request)
    )


@pytest.mark.parametrize("which", FOREIGN_TOKENS)
@pytest.mark.parametrize("action", ["renew", "release"])
def test_renew_and_release_refuse_a_foreign_token_on_the_held_item(
    alice_client, world, stage, action, which
):
    with rolled_back() as change:
        response = _post(
            alice_client,
            world.held.pk,
            action,
            {"lease_token": _foreign(stage, which)},
            Accept="application/json",
        )
    assert change.nothing
    assert response.status_code in (302, 409)


# -- the login forms ------------------------------------------------------------------------------

LOGIN_PATHS = ["/accounts/login/", "/admin/login/"]


def _effective(value: object) -> str:
    """What the form reads from a posted field: the last of repeats, "" when missing."""
    if isinstance(value, list):
        return value[-1]
    return "" if value is None else str(value)


@settings(FUZZ, derandomize=True)
@example(path=LOGIN_PATHS[0], username="a" * 256, password="pw")  # axes' column overflowed
@example(path=LOGIN_PATHS[1], username="a" * 256, password="pw")
@example(path=LOGIN_PATHS[0], username="a" * 151, password="pw-alice")
@example(path=LOGIN_PATHS[0], username="alice\x00", password="pw-alice")
@example(path=LOGIN_PATHS[1], username="alice", password="\x00")
@example(path=LOGIN_PATHS[0], username="alice", password="p" * 300_000)
@example(path=LOGIN_PATHS[0], username=["alice", "\x00" * 300], password="pw-alice")
@example(path=LOGIN_PATHS[0], username="alice", password="pw-alice")
@example(path=LOGIN_PATHS[1], username="\u202e\ufeff", password=MISSING)
@given(
    path=st.sampled_from(LOGIN_PATHS),
    username=form_field(st.sampled_from(["alice", "bob", "nobody"])),
    password=form_field(st.sampled_from(["pw-alice", "wrong"])),
)
def test_the_login_forms_survive_hostile_posts(alice, path, username, password):
    posted = form(username=username, password=password)
    typed_name = _effective(posted.get("username")).strip()
    typed_password = _effective(posted.get("password"))
    with rolled_back():
        response = Client().post(path, posted)
        attempts = list(AccessAttempt.objects.values_list("username", flat=True))
    event(f"login: {response.status_code}")
    assert response.status_code in (200, 302)
    hers = (typed_name, typed_password) == ("alice", "pw-alice")
    if response.status_code == 302:
        # Only alice's own credentials open a session (the admin wants staff: she is not).
        assert hers and path == LOGIN_PATHS[0]
        return
    page = response.content.decode()
    if hers:
        # The admin refuses her as not staff: the usual words, but no wrong password to count.
        assert path == LOGIN_PATHS[1] and "correct username and password" in page
    elif typed_name and typed_password:
        # Anything else typed in both fields is a wrong login, said the usual way, and counted.
        assert "correct username and password" in page, posted
        assert len(attempts) == 1, posted
        assert len(attempts[0]) <= 150 and "\x00" not in attempts[0]
    else:
        assert "This field is required" in page
        assert attempts == []
