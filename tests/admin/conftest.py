"""Admin personas and a decided item to overturn.

Personas on top of tests/conftest.py: `root` (superuser), `compliance` (staff in an Admins group
holding what seed_demo grants, including can_overturn), `viewer` (staff who may look at
everything but not overturn). Reviewers (alice, bob) are not staff and get no admin at all.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test import Client

from queue_app.admin.permissions import admin_group_permissions
from queue_app.models import Decision, ReviewItem
from queue_app.services import claim_next, submit_decision
from tests.conftest import make_items, shown_hash
from tests.worker.conftest import PROJECT_DIR, database_url


def _staff(username: str, **fields) -> User:
    return User.objects.create_user(
        username=username, password="pw-" + username, is_staff=True, **fields
    )


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", password="pw-root")


@pytest.fixture
def compliance(db) -> User:
    """Staff in the Admins group, with the permissions seed_demo gives that group."""
    group = Group.objects.create(name="Admins")
    group.permissions.set(admin_group_permissions())
    user = _staff("casey", first_name="Casey", last_name="Moreau")
    user.groups.add(group)
    return user


@pytest.fixture
def viewer(db) -> User:
    """Staff who can view every queue_app page but holds no can_overturn."""
    user = _staff("vic")
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="queue_app", codename__startswith="view_")
    )
    return user


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def decide(item: ReviewItem, reviewer: User, verdict: str = "approve", reason: str = "verified"):
    """Claim this exact item for the reviewer and decide it (it must be next in its queue)."""
    claimed = claim_next(queue=item.queue, reviewer=reviewer)
    assert claimed.pk == item.pk
    return submit_decision(
        item_id=claimed.pk,
        reviewer=reviewer,
        lease_token=claimed.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(claimed),
        note="looks fine",
    )


@pytest.fixture
def approved(queue, alice) -> Decision:
    """An item alice approved."""
    (item,) = make_items(queue, 1, prefix="Applicant")
    return decide(item, alice)


def run_apply_worker_once() -> str:
    """Run the real `manage.py run_apply_worker --once` against the test database; return its log.

    Only committed decisions are visible to it, so callers use django_db(transaction=True).
    """
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict)}
    done = subprocess.run(
        [sys.executable, "manage.py", "run_apply_worker", "--once", "--escalate-every", "0"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr
