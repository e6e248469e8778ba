"""The demo's waiting appeal (make run): one appeal on a standing restriction, filed once."""

from __future__ import annotations

import pytest

from queue_app.management.appeal_demo import seed_waiting_appeal
from queue_app.models import Appeal
from tests.appeals.conftest import restricted

pytestmark = pytest.mark.django_db


def test_it_files_one_appeal_on_the_newest_standing_restriction(posts, alice):
    assert seed_waiting_appeal(posts) is None  # nothing decided yet: nothing to appeal
    restricted(posts, alice)
    newest = restricted(posts, alice)
    appeal = seed_waiting_appeal(posts)
    assert appeal is not None
    assert (appeal.decision_id, appeal.statement_id) == (newest.decision_id, newest.pk)
    assert appeal.task.state == "open" and appeal.task.kind == "appeal"
    # Run again (a second make run): the same appeal, still waiting.
    assert seed_waiting_appeal(posts) == appeal
    assert Appeal.objects.count() == 1
