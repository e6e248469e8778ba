"""Seed a separate database for the outage test (run inside `manage.py shell` there)."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import connection

from tests.conftest import make_queue
from tests.worker.conftest import LEDGER_EFFECT, decide
from tests.worker.ledger import LEDGER_TABLE


def seed(n: int) -> None:
    """Create the ledger table, a reviewer, a ledger-effect queue and n decisions."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {LEDGER_TABLE} (id bigserial PRIMARY KEY, decision_id bigint NOT NULL)"
        )
    group = Group.objects.create(name="Reviewers")
    reviewer = User.objects.create_user("alice")
    reviewer.groups.add(group)
    queue = make_queue("kyc", group=group, effect=LEDGER_EFFECT)
    decide(queue, reviewer, n)
