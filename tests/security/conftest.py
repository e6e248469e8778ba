"""Security personas and fixtures: one of every kind of caller, and a world for them to probe.

On top of tests/conftest.py (alice reviews the kyc queue): `stranger` reviews another queue
only, `viewer` is staff who may look at every queue_app page but holds no can_overturn, `root`
is a superuser, and two API clients are granted kyc, one with both scopes and one with none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models.functions import Now
from django.test import Client
from django.utils import timezone

from queue_app.api.auth import issue_api_client
from queue_app.apply import apply_one
from queue_app.models import (
    AutomationSwitch,
    ChainVerification,
    CheckPolicy,
    Decision,
    EffectJob,
    LaneTask,
    Queue,
    ReasonCode,
    ReviewItem,
)
from queue_app.services import (
    claim_batch,
    claim_lane_task,
    claim_next,
    put_attachment,
)
from tests.conftest import approve_as_shown, make_items, make_queue, shown_hash

PERSONAS = ("anonymous", "stranger", "reviewer", "viewer", "admin", "api_scoped", "api_unscoped")


@dataclass
class World:
    """Everything the authorization matrix requests: users, clients and one object of each kind."""

    users: dict[str, User]
    tokens: dict[str, str]
    held: ReviewItem  # leased to alice (the reviewer)
    robot_held: ReviewItem  # leased to the scoped API client
    pending: ReviewItem
    decision: Decision  # bob's, applied; nobody in PERSONAS made it (four eyes)
    dead_job_decision: Decision  # bob's, its effect job dead (for the ops retry button)
    samples: dict[str, int]  # "app.model" -> the pk of one row, for admin object pages
    content_type_id: int
    held_attachment: str  # sha256 of the image attached to the held item
    held_pdf: str  # sha256 of the two-page PDF attached to the held item

    def sample_pk(self, app: str, model: str) -> int:
        """Return the pk of an existing row of app.model."""
        return self.samples[f"{app}.{model}"]

    sessions: dict[str, str]  # persona -> session key, logged in once up front
    # A check (second-person lane) of a decision by bob, leased to alice (the reviewer).
    lane_task: LaneTask | None = None

    def client(self, persona: str) -> Client:
        """Return a test client acting as the persona (session or bearer token)."""
        if persona in self.tokens:
            return Client(headers={"Authorization": f"Bearer {self.tokens[persona]}"})
        client = Client()
        if persona in self.sessions:
            client.cookies[settings.SESSION_COOKIE_NAME] = self.sessions[persona]
        return client


def _session_key(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


@pytest.fixture
def stranger(db) -> User:
    """A reviewer of the aml queue only: no access to kyc."""
    group = Group.objects.create(name="AML reviewers")
    make_queue("aml", group=group)
    user = User.objects.create_user("stan", password="pw-stan")
    user.groups.add(group)
    return user


@pytest.fixture
def viewer(db) -> User:
    """Staff who can view every queue_app page but holds no can_overturn."""
    user = User.objects.create_user("vic", password="pw-vic", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="queue_app", codename__startswith="view_")
    )
    return user


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", password="pw-root")


def _decided_by(queue: Queue, reviewer: User) -> Decision:
    item = claim_next(queue=queue, reviewer=reviewer)
    return approve_as_shown(item, reviewer)


def _access_rows() -> dict[str, int]:
    seen = {"user_agent": "test", "ip_address": "127.0.0.1", "username": "x", "http_accept": "*/*"}
    return {
        "axes.accessattempt": AccessAttempt.objects.create(
            **seen, path_info="/accounts/login/", get_data="", post_data="", failures_since_start=1
        ).pk,
        "axes.accesslog": AccessLog.objects.create(**seen, path_info="/accounts/login/").pk,
        "axes.accessfailurelog": AccessFailureLog.objects.create(
            **seen, path_info="/accounts/login/"
        ).pk,
    }


@pytest.fixture
def world(queue, alice, bob, stranger, viewer, root) -> World:
    make_items(queue, 5)
    # Hold reasons for the hold form, and a subject for GET /items?subject_key=.
    from tests.clocks.helpers import add_hold_reasons

    add_hold_reasons(queue)
    queue.items.update(subject_key="cust-matrix")
    # bob decides two items: one applied, one whose effect went dead.
    decision = _decided_by(queue, bob)
    assert apply_one()
    dead = _decided_by(queue, bob)
    EffectJob.objects.filter(pk=dead.pk).update(dead=True)
    held = claim_next(queue=queue, reviewer=alice)
    scoped, scoped_token = issue_api_client(
        name="robot", can_intake=True, can_adjudicate=True, queues=[queue]
    )
    _, unscoped_token = issue_api_client(name="mute", queues=[queue])
    (robot_held,) = claim_batch(queue=queue, worker=scoped.user, n=1, ttl=timedelta(minutes=5))
    # Both leases are live but near their end, so a renew (or a second Next) visibly moves them:
    # inside one test transaction now() does not advance.
    ReviewItem.objects.filter(pk__in=[held.pk, robot_held.pk]).update(
        lease_expires=Now() + timedelta(seconds=60)
    )
    from tests.attachments.conftest import pdf_bytes
    from tests.security.routes import attachment_png

    put_attachment(item_id=held.pk, actor=root, name="id-front", data=attachment_png())
    put_attachment(item_id=held.pk, actor=root, name="statement.pdf", data=pdf_bytes(2))
    held.refresh_from_db()
    robot_held.refresh_from_db()
    # Second-person lanes: bob's next approval needs a check, which alice holds.
    make_items(queue, 1, prefix="lane")
    policy = CheckPolicy.objects.create(queue=queue, verdict="approve")
    checked = _decided_by(queue, bob)
    policy.delete()  # only that one decision: the rest of the world decides as before
    lane_task = claim_lane_task(queue=queue, kind="check", user=alice)
    assert lane_task is not None and lane_task.decision_id == checked.pk
    LaneTask.objects.filter(pk=lane_task.pk).update(lease_expires=Now() + timedelta(seconds=60))
    lane_task.refresh_from_db()
    pending = queue.items.filter(state="pending").first()
    chain = ChainVerification.objects.create(ok=True, checked=1, message="ok")
    samples = {
        "auth.group": Group.objects.get(name="Reviewers").pk,
        "auth.user": alice.pk,
        "queue_app.apiclient": scoped.pk,
        "queue_app.queue": queue.pk,
        "queue_app.reasoncode": ReasonCode.objects.filter(queue=queue).first().pk,
        "queue_app.reviewitem": held.pk,
        "queue_app.decision": decision.pk,
        "queue_app.applieddecision": decision.pk,
        "queue_app.effectjob": dead.pk,
        "queue_app.chainverification": chain.pk,
        "queue_app.automationswitch": AutomationSwitch.objects.get_or_create(pk=1)[0].pk,
        **_statement_rows(bob),
        **_access_rows(),
    }
    users = {"stranger": stranger, "reviewer": alice, "viewer": viewer, "admin": root}
    return World(
        users=users,
        sessions={persona: _session_key(user) for persona, user in users.items()},
        tokens={"api_scoped": scoped_token, "api_unscoped": unscoped_token},
        held=held,
        robot_held=robot_held,
        pending=pending,
        decision=decision,
        dead_job_decision=dead,
        samples=samples,
        content_type_id=ContentType.objects.get_for_model(ReviewItem).pk,
        held_attachment=held.attachments["id-front"]["sha256"],
        held_pdf=held.attachments["statement.pdf"]["sha256"],
        lane_task=lane_task,
    )


def decision_body(item: ReviewItem, **fields: Any) -> dict[str, Any]:
    """A valid API decision body for an item leased to the caller."""
    return {
        "lease_token": str(item.lease_token),
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": shown_hash(item),
        "note": "",
        **fields,
    }


@pytest.fixture
def alice_client(alice) -> Client:
    """A browser session logged in as alice (the login itself is tested in test_login_throttle)."""
    client = Client()
    client.force_login(alice)
    return client


def _statement_rows(bob) -> dict[str, int]:
    """A queue of its own with a statement policy, and one statement with its deliveries."""
    from queue_app.models import StatementDelivery
    from queue_app.services.statements import record_statement
    from tests.statements.conftest import decide, give_policy, map_reason

    posts = make_queue("posts", group=Group.objects.get(name="Reviewers"))
    policy = give_policy(posts)
    mapping = map_reason(posts, "fraud")
    with transaction.atomic():
        statement = record_statement(decision=decide(posts, bob))
    assert statement is not None
    return {
        "queue_app.appeal": _appeal(statement).pk,
        "queue_app.statementpolicy": policy.pk,
        "queue_app.reasonmapping": mapping.pk,
        "queue_app.statementofreasons": statement.pk,
        "queue_app.statementdelivery": StatementDelivery.objects.filter(statement=statement)
        .first()
        .pk,
    }


def _appeal(statement) -> Any:
    """An appeal of the statement's decision, as filed (its task open), for the admin's pages."""
    from queue_app.models import Appeal, LaneKind, LaneTask

    decision = statement.decision
    client, _ = issue_api_client(
        name="appeals-platform", can_intake=True, can_adjudicate=False, queues=[decision.queue]
    )
    now = timezone.now()
    task = LaneTask.objects.create(
        kind=LaneKind.APPEAL,
        queue_id=decision.queue_id,
        item_id=decision.item_id,
        decision=decision,
        maker_id=decision.reviewer_id,
        due_at=now + timedelta(days=14),
    )
    return Appeal.objects.create(
        queue_id=decision.queue_id,
        item_id=decision.item_id,
        decision=decision,
        statement=statement,
        client=client,
        reference="complaint-1",
        request_sha256="0" * 64,
        text="Please look again.",
        received_at=now,
        due_at=now + timedelta(days=14),
        window_ends_at=now + timedelta(days=180),
        task=task,
    )
