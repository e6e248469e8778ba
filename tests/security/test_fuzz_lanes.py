"""Hostile posts to the second-person lane pages: never a 500, never a half-written outcome.

alice holds a check of bob's decision (the security world); the posts spoil the fields each
lane form carries, post to every lane action, as alice and as bob (the maker).
"""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from queue_app.models import EffectJob, LaneOutcome, LaneTask
from tests.security.conftest import World
from tests.security.ledger import rolled_back
from tests.security.strategies import FUZZ, form, form_field

pytestmark = pytest.mark.django_db

ACTIONS = ["confirm", "return", "qa", "adjudicate", "release", "renew"]


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _lease(task_id: int) -> tuple:
    return LaneTask.objects.values_list("lease_owner_id", "lease_expires").get(pk=task_id)


@settings(FUZZ, derandomize=True)
@given(data=st.data())
def test_lane_posts_survive_hostile_input(world: World, bob, data):
    task = world.lane_task
    alice = world.users["reviewer"]
    who = data.draw(st.sampled_from(["alice", "bob"]))
    client = _client(alice if who == "alice" else bob)
    action = data.draw(st.sampled_from(ACTIONS))
    task_id = data.draw(st.sampled_from([task.pk, task.pk + 1, 999_999, 2**63]))
    posted = form(
        lease_token=data.draw(
            form_field(st.sampled_from([str(task.lease_token), str(uuid.uuid4()), "x", ""]))
        ),
        note=data.draw(form_field(st.text(max_size=40))),
        verdict=data.draw(form_field(st.sampled_from(["approve", "reject", "overturn", ""]))),
        reason_code=data.draw(form_field(st.sampled_from(["verified", "fraud", "nope", ""]))),
        outcome=data.draw(form_field(st.sampled_from(["uphold", "overturn", "maybe"]))),
    )
    lease_before = _lease(task.pk)
    with rolled_back():
        response = client.post(f"/lanes/{task_id}/{action}/", posted)
        lease_after = _lease(task.pk)
        outcomes = list(LaneOutcome.objects.values_list("task_id", "result", "actor_id"))
        jobs = set(EffectJob.objects.values_list("decision_id", flat=True))
        state = LaneTask.objects.filter(pk=task.pk).values_list("state", flat=True).first()
    assert response.status_code < 500, (action, posted)
    assert response.status_code in (200, 302, 400, 404, 409), (response.status_code, action, posted)
    # Only alice's own post, with her token, on her task moves her lease (renew, release).
    if lease_after != lease_before:
        assert (
            who == "alice"
            and task_id == task.pk
            and posted.get("lease_token") == str(task.lease_token)
        ), (action, posted)
        if action == "renew":
            assert lease_after[0] == alice.pk and lease_after[1] >= lease_before[1]
    # The maker never finishes their own check, whatever they post.
    assert not any(actor == bob.pk for _, _, actor in outcomes)
    # At most the one outcome alice's own, well-formed post can write; a confirmation only
    # with the effect job, a done task only with its outcome.
    assert len(outcomes) <= 1
    if outcomes:
        ((_, result, actor),) = outcomes
        assert (
            actor == alice.pk
            and task_id == task.pk
            and posted.get("lease_token") == str(task.lease_token)
        )
        assert (task.decision_id in jobs) == (result == "confirmed")
        assert state == "done"
    else:
        assert task.decision_id not in jobs
        assert state == "open"
