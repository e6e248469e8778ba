"""Shared fixtures: personas, a queue with its reason codes, and real-commit helpers.

Every test talks to real PostgreSQL (the embedded server by default, DATABASE_URL otherwise).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Group, Permission, User
from django.db import connection, connections, transaction
from django.db.backends.postgresql.operations import DatabaseOperations
from django.template.backends import jinja2 as jinja2_backend
from django.test import Client
from django.test.signals import template_rendered

from queue_app.evidence import item_evidence_hash
from queue_app.models import Queue, ReasonCode, ReviewItem, Verdict
from queue_app.services import create_item, submit_decision
from queue_app.services import decisions as decisions_service

# Launches the Chromium `make test` chose (REVIEW_BROWSER); errors loudly when there is none.
from tests.browser import browser_type_launch_args  # noqa: F401


def _flush_past_append_only_triggers(self: DatabaseOperations, sql_list: list[str]) -> None:
    # Transactional tests end with Django's flush (TRUNCATE), which the append-only triggers
    # rightly refuse. Test teardown alone replays it with user triggers off for that one
    # transaction; the application and every test body run with them on.
    with transaction.atomic(using=self.connection.alias), self.connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        for statement in sql_list:
            cursor.execute(statement)


DatabaseOperations.execute_sql_flush = _flush_past_append_only_triggers


_jinja2_render = jinja2_backend.Template.render


def _jinja2_render_with_signal(self: Any, context: Any = None, request: Any = None) -> str:
    # What Django's test setup does for its own templates (instrumented_test_render): the test
    # client hears of each page rendered, so response.context and assertTemplateUsed work for
    # the console's Jinja2 pages as well (the context as rendered, processors included).
    context = {} if context is None else context
    html = _jinja2_render(self, context, request)
    template_rendered.send(sender=self, template=self.template, context=context)
    return html


jinja2_backend.Template.render = _jinja2_render_with_signal


_force_login = Client.force_login


def _force_login_with_second_factor(self: Client, user: Any, backend: str | None = None) -> None:
    # force_login skips the password; for a holder of a staff power (or everyone,
    # MFA_REQUIRED_FOR_ALL) it skips the second factor too, as if they had typed a code, so
    # tests of other pages need not enrol. Tests of the second factor itself sign in with
    # client.login() or the login page, which this does not touch (tests/identity/).
    from queue_app.identity.mfa import holds_staff_power

    _force_login(self, user, backend)
    if holds_staff_power(user) or django_settings.MFA_REQUIRED_FOR_ALL:
        from django_otp import DEVICE_ID_SESSION_KEY
        from django_otp.plugins.otp_totp.models import TOTPDevice

        device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
        if device is None:
            device = TOTPDevice.objects.create(user=user, name="test suite", confirmed=True)
        session = self.session
        session[DEVICE_ID_SESSION_KEY] = device.persistent_id
        session.save()


Client.force_login = _force_login_with_second_factor


@pytest.fixture(autouse=True)
def _fast_passwords(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


REASONS = {
    Verdict.APPROVE: ["verified", "within_tolerance"],
    Verdict.REJECT: ["fraud", "document_expired"],
    Verdict.ESCALATE: ["policy_gap"],
    Verdict.OVERTURN: ["reviewer_error"],
}


def make_queue(slug: str = "kyc", *, group: Group | None = None, **fields: Any) -> Queue:
    """Create a queue with a reason code per verdict, reviewable by the group."""
    queue = Queue.objects.create(slug=slug, name=slug.title(), **fields)
    for verdict, codes in REASONS.items():
        for code in codes:
            ReasonCode.objects.create(queue=queue, verdict=verdict, code=code, label=code)
    if group is not None:
        queue.reviewer_groups.add(group)
    return queue


def make_items(
    queue: Queue, n: int, *, prefix: str = "item", priority: int = 0
) -> list[ReviewItem]:
    """Create n items with distinct keys and a small exact-decimal payload."""
    return [
        create_item(
            queue=queue,
            subject=f"{prefix} {i}",
            payload={"n": i, "amount": "12.50"},
            idempotency_key=f"{queue.slug}-{prefix}-{i}",
            source_hash=f"h{i}",
            priority=priority,
        )[0]
        for i in range(n)
    ]


@contextmanager
def triggers_off(*tables: str, foreign_keys: bool = False) -> Iterator[Any]:
    """A cursor on the test's connection with the tables' triggers switched off, as an owner of
    the database could: the append-only and sealing triggers (USER), and with foreign_keys the
    constraint triggers too (ALL, a superuser's). Constraints are checked at once meanwhile, so
    a write that breaks one fails where it is made. The triggers are back on afterwards."""
    which = "ALL" if foreign_keys else "USER"
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for table in tables:
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {which}")
        try:
            yield cursor
        finally:
            for table in tables:
                cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {which}")


def make_legacy(decision_ids: list[int]) -> None:
    """Give decisions the per-decision chain links they would carry from before sealing.

    Migration 0010 ended chain assignment at insert time; decisions recorded earlier keep
    chain_seq and chain_hash. This rewrites the given decisions (with user triggers off, as a
    restore would) into exactly that shape, in id order, and takes them off the sealer's list.
    """
    with triggers_off("queue_app_decision") as cursor:
        cursor.execute(
            "DELETE FROM queue_app_unsealeddecision WHERE decision_id = ANY(%s)", [decision_ids]
        )
        cursor.execute(
            """
            DO $$
            DECLARE d queue_app_decision; prev text := ''; n bigint := 0;
            BEGIN
              FOR d IN SELECT * FROM queue_app_decision WHERE id = ANY(%s) ORDER BY id LOOP
                n := n + 1;
                d.chain_seq := n;
                UPDATE queue_app_decision AS x SET chain_seq = n,
                       chain_hash = encode(sha256(convert_to(
                           prev || '|' || queue_app_decision_chain_input(d), 'UTF8')), 'hex')
                 WHERE x.id = d.id RETURNING x.chain_hash INTO prev;
              END LOOP;
            END $$
            """.replace("%s", "ARRAY[" + ",".join(str(int(i)) for i in decision_ids) + "]")
        )


def shown_hash(item: ReviewItem) -> str:
    """The evidence hash the item page would put in the form (attachments included)."""
    return item_evidence_hash(item)


def approve_as_shown(
    item: ReviewItem,
    reviewer: User,
    *,
    queue_id: int | None = None,
    warnings_seen: bool | None = None,
) -> Any:
    """Approve (reason verified) an item its reviewer holds, as its page showed it: the lease
    token and evidence hash of the item as claimed. queue_id, warnings_seen: as the console
    passes them."""
    return submit_decision(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=item.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(item),
        queue_id=queue_id,
        warnings_seen=warnings_seen,
    )


@pytest.fixture
def explained_refusals(monkeypatch) -> list[int]:
    """The items whose decide (decisions_sql.CLOSE_AND_RECORD_DECISION) wrote nothing and whose
    refusal was then explained from the row (services.decisions._refusal)."""
    calls: list[int] = []
    original = decisions_service._refusal

    def counted(**kwargs: Any) -> Exception:
        calls.append(kwargs["item_id"])
        return original(**kwargs)

    monkeypatch.setattr(decisions_service, "_refusal", counted)
    return calls


@pytest.fixture
def reviewers_group(db) -> Group:
    return Group.objects.create(name="Reviewers")


@pytest.fixture
def queue(reviewers_group) -> Queue:
    escalation = make_queue("escalation", group=reviewers_group)
    return make_queue(
        "kyc", group=reviewers_group, escalation_queue=escalation, lease_ttl=timedelta(minutes=5)
    )


def _user(username: str, group: Group | None = None, **fields: Any) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username, **fields)
    if group is not None:
        user.groups.add(group)
    return user


@pytest.fixture
def alice(reviewers_group) -> User:
    """A reviewer with access to the queue."""
    return _user("alice", reviewers_group)


@pytest.fixture
def bob(reviewers_group) -> User:
    """A second reviewer with access to the queue."""
    return _user("bob", reviewers_group)


@pytest.fixture
def outsider(db) -> User:
    """A logged-in user with no queue access."""
    return _user("mallory")


def with_permission(user: User, codename: str) -> User:
    """Give user a queue_app permission; returns a fresh object (Django caches permissions on
    the old)."""
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="queue_app", codename=codename)
    )
    return User.objects.get(pk=user.pk)


def with_overturn_permission(user: User) -> User:
    """Give user can_overturn; returns a fresh object (Django caches permissions on the old)."""
    return with_permission(user, "can_overturn")


@pytest.fixture
def supervisor(reviewers_group) -> User:
    """Staff with the can_overturn permission (not a superuser)."""
    return with_overturn_permission(_user("sam", reviewers_group, is_staff=True))


@pytest.fixture
def retrier(db) -> User:
    """Staff who may put dead effect jobs back in line (change_effectjob, as Retry needs)."""
    return with_permission(_user("rita", is_staff=True), "change_effectjob")


def run_in_threads(n: int, target: Callable[[int], Any]) -> list[Any]:
    """Run target(i) in n threads, each with its own database connection, all started together.

    Returns each thread's result (or raises the first exception). Connections are closed so the
    test database can be dropped afterwards.
    """
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as exc:  # reported to the test below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def backdate_lease(item_id: int, *, seconds: int = 3600) -> None:
    """Make a live lease look expired, as if the reviewer walked away long ago."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET lease_expires = now() - make_interval(secs => %s) "
            "WHERE id = %s",
            [seconds, item_id],
        )


# -- browser tests --------------------------------------------------------------------------------
# Playwright's sync API runs an event loop in the test thread; Django refuses ORM calls from a
# thread with a running loop unless told the caller knows what it is doing (we do: the loop is
# Playwright's, not ours, and the ORM calls are synchronous test setup).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot under test-artifacts/ (not committed) and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
