"""The demo with every page in a state worth looking at, served by gunicorn: for axe, screenshots
and Lighthouse.

`seed_states()` runs `seed_demo` (what `make run` shows) and then puts pages into the states a
reviewer, a checker, an adjudicator and an admin meet: an item alice holds with an identity
card, an item bob holds, one decided, one on hold, a sensitive item with a veiled image and a
PDF, a machine suggestion, a check, a QA review and an adjudication each leased to the person
who works it. `sessions()` signs the demo's people in (staff with a verified second factor, as
after the code page) and returns their session keys, for a browser's cookie. `serve()` starts
gunicorn on the database, production settings over plain http (reviewconsole.settings_test).

tests/a11y/test_axe_every_page.py seeds the test database with it; bin/screenshots and
bin/lighthouse seed a database of their own (`scratch_database()`), so a demo someone is using
under `make run` is never touched. Not a test module (no test_ prefix).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parents[1]
# Items per working queue: enough for full tables and a subject history, quick to seed.
DEMO_ITEMS = 24
DEMO_PASSWORD = "demo-pages-only"


@dataclass
class Demo:
    """Where each state lives: item, task and decision ids, and a sample row per admin model."""

    item_mine: int  # alice holds it: the decision form, an identity card, evidence warnings
    item_with_suggestion: int  # alice holds it in the screening queue: a machine suggestion
    item_sensitive: int  # alice holds it in a sensitive queue: a veiled image and a PDF
    item_held_by_other: int  # bob holds it, alice looks
    item_pending: int  # nobody holds it
    item_decided: int  # decided by bob, with its history
    item_on_hold: int  # put on hold by bob
    check_task: int  # carol holds a check of bob's decision
    qa_task: int  # carol holds a QA review of bob's decision
    adjudication_task: int  # admin holds the adjudication of carol's disagreement
    appeal_task: int  # admin holds the appeal of alice's removal in content-moderation
    decision: int  # bob's decision, overturnable by admin
    samples: dict[str, int] = field(default_factory=dict)  # "app.model" -> a pk, admin pages


def _high_priority_item(
    queue: Any, key: str, subject: str, payload: dict[str, Any], subject_key: str | None = None
) -> Any:
    from queue_app.services import create_item

    return create_item(
        queue=queue,
        subject=subject,
        payload=payload,
        subject_key=subject_key,
        idempotency_key=f"pages-{key}",
        source_hash=f"pages-{key}",
        priority=100,  # claimed before the demo's own items (priority 0-10)
    )[0]


def _claim(queue: Any, user: Any, item: Any) -> Any:
    from queue_app.services import claim_next

    claimed = claim_next(queue=queue, reviewer=user)
    assert claimed is not None and claimed.pk == item.pk, (claimed, item)
    return claimed


def _decide(item: Any, user: Any, verdict: str, reason: str) -> Any:
    from queue_app.evidence import item_evidence_hash
    from queue_app.services import submit_decision

    return submit_decision(
        item_id=item.pk,
        reviewer=user,
        lease_token=item.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=item_evidence_hash(item),
        note="Checked against the registry extract.",
    )


def seed_states(*, items: int = DEMO_ITEMS) -> Demo:
    """Seed the demo and the page states above; return where they are."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.utils import timezone

    from queue_app.management.commands.seed_demo import demo_id_card
    from queue_app.models import LaneTask, Queue, ReviewItem
    from queue_app.services import claim_lane_task, hold_item, put_attachment

    os.environ.setdefault("DEMO_PASSWORD", DEMO_PASSWORD)
    call_command("seed_demo", items=items, stdout=open(os.devnull, "w"))  # noqa: SIM115
    alice, bob, carol, admin = (
        User.objects.get(username=name) for name in ("alice", "bob", "carol", "admin")
    )
    kyc = Queue.objects.get(slug="kyc")
    recon = Queue.objects.get(slug="reconciliation")
    screening = Queue.objects.get(slug="transaction-screening")
    moderation = Queue.objects.get(slug="content-moderation")

    # Alice's item: an identity card, an expired document and a failed liveness check (warnings).
    mine = _high_priority_item(
        kyc,
        "mine",
        "Amara Okafor",
        {
            "applicant": {"name": "Amara Okafor", "date_of_birth": "1991-04-12", "country": "GB"},
            "document": {"type": "passport", "number": "DEMO41001", "expires": "2025-02-28"},
            "provider": {"document_authenticity": "pass", "liveness_score": "0.41"},
            "onboarding_note": "Onboarded via the mobile app; proof of address uploaded later.",
        },
        subject_key="CUS-00001",  # a returning customer: the page lists their other items
    )
    put_attachment(item_id=mine.pk, actor=admin, name="id-front.png", data=demo_id_card(0, "A"))
    mine = _claim(kyc, alice, mine)

    # Bob holds one, decides one, puts one on hold; one stays pending.
    # (One lease at a time: a second claim gives a reviewer back the item they hold.)
    decided = _claim(kyc, bob, _high_priority_item(kyc, "decided", "Mei Chen", {"n": 2}))
    decision = _decide(decided, bob, "approve", "identity_verified")
    on_hold = _claim(kyc, bob, _high_priority_item(kyc, "hold", "Tomasz Nowak", {"n": 3}))
    hold_item(
        item_id=on_hold.pk,
        reviewer=bob,
        lease_token=on_hold.lease_token,
        reason_code="awaiting_documents",
        hold_until=timezone.now() + timedelta(days=2),
    )
    other = _claim(kyc, bob, _high_priority_item(kyc, "bob", "Jonas Lindqvist", {"n": 1}))
    pending = _high_priority_item(kyc, "pending", "Lucía García", {"n": 4})
    ReviewItem.objects.filter(pk=pending.pk).update(priority=0)

    # A sensitive queue: the image veiled until revealed, and a PDF.
    sensitive, _ = Queue.objects.get_or_create(
        slug="sensitive-media",
        defaults={"name": "Sensitive media", "sensitive": True, "escalation_queue": kyc},
    )
    sensitive.reviewer_groups.set(kyc.reviewer_groups.all())
    from queue_app.models import ReasonCode

    for verdict, code in [("approve", "allowed"), ("reject", "harmful"), ("escalate", "unsure")]:
        ReasonCode.objects.get_or_create(
            queue=sensitive, verdict=verdict, code=code, defaults={"label": code.title()}
        )
    veiled = _high_priority_item(sensitive, "veiled", "Upload 7731", {"uploader": "user-7731"})
    put_attachment(item_id=veiled.pk, actor=admin, name="upload.png", data=demo_id_card(1, "B"))
    put_attachment(item_id=veiled.pk, actor=admin, name="report.pdf", data=_pdf())
    veiled = _claim(sensitive, alice, veiled)

    # A machine suggestion (the screening queue's items carry one).
    suggested = claim_next_in(screening, alice)

    # The lanes: carol checks and QA-reviews bob's decisions; her disagreement on a second QA
    # review becomes an adjudication the admin holds.
    adjudication = _adjudication(recon, bob, carol, admin)
    check = claim_lane_task(queue=recon, kind="check", user=carol)
    qa = claim_lane_task(queue=recon, kind="qa", user=carol)
    assert check is not None and qa is not None, "seed_demo left no check or QA task"
    # The appeal seed_demo files against alice's removal: the admin, no part of its chain.
    appeal = claim_lane_task(queue=moderation, kind="appeal", user=admin)
    assert appeal is not None, "seed_demo left no appeal waiting"
    LaneTask.objects.filter(pk__in=[check.pk, qa.pk, adjudication, appeal.pk]).update(
        lease_expires=timezone.now() + timedelta(hours=8)
    )
    # Leases that outlive a slow run (a page checked minutes after seeding still shows them).
    ReviewItem.objects.filter(pk__in=[mine.pk, other.pk, veiled.pk, suggested]).update(
        lease_expires=timezone.now() + timedelta(hours=8)
    )
    return Demo(
        item_mine=mine.pk,
        item_with_suggestion=suggested,
        item_sensitive=veiled.pk,
        item_held_by_other=other.pk,
        item_pending=pending.pk,
        item_decided=decided.pk,
        item_on_hold=on_hold.pk,
        check_task=check.pk,
        qa_task=qa.pk,
        adjudication_task=adjudication,
        appeal_task=appeal.pk,
        decision=decision.pk,
        samples=admin_samples(),
    )


def claim_next_in(queue: Any, user: Any) -> int:
    from queue_app.services import claim_next

    item = claim_next(queue=queue, reviewer=user)
    assert item is not None, f"nothing to claim in {queue.slug}"
    return int(item.pk)


def _adjudication(recon: Any, bob: Any, carol: Any, admin: Any) -> int:
    """Carol disagrees with bob in a QA review: the adjudication task, leased to admin.

    Bob decides one more item with every decision drawn for QA, so that a QA task is left for
    carol's own page after she has done this one."""
    from decimal import Decimal

    from queue_app.services import claim_lane_task, record_qa_review

    rate = recon.qa_rate
    recon.qa_rate = Decimal("100")
    recon.save(update_fields=["qa_rate"])
    item = _high_priority_item(
        recon,
        "qa-disagreement",
        "GLOBEX-LTD statement line 9001",
        {
            "ledger_entity": "GLOBEX-LTD",
            "variance_amount": Decimal("1.20"),
            "ledger_amount": Decimal("100.00"),
            "bank_amount": Decimal("98.80"),
            "match_decision": "MATCHED",
            "currency": "EUR",
        },
    )
    _decide(_claim(recon, bob, item), bob, "approve", "within_tolerance")
    recon.qa_rate = rate
    recon.save(update_fields=["qa_rate"])
    qa = claim_lane_task(queue=recon, kind="qa", user=carol)
    assert qa is not None
    verdict, reason = (
        ("reject", "missing_entry")
        if qa.decision.verdict == "approve"
        else ("approve", "within_tolerance")
    )
    record_qa_review(
        task_id=qa.pk,
        user=carol,
        lease_token=qa.lease_token,
        verdict=verdict,
        reason_code=reason,
        note="The bank line is a duplicate.",
    )
    adjudication = claim_lane_task(queue=recon, kind="adjudication", user=admin)
    assert adjudication is not None
    return int(adjudication.pk)


def _pdf() -> bytes:
    """A one-page PDF (blank, A6): what a customer's statement upload looks like to the server."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (298, 420), "white").save(out, format="PDF")
    return out.getvalue()


def admin_samples() -> dict[str, int]:
    """The first row of every model the admin site lists, by "app.model"."""
    from django.contrib import admin

    samples = {}
    for model in admin.site._registry:
        row = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
        if row is not None:
            samples[f"{model._meta.app_label}.{model._meta.model_name}"] = row
    return samples


# -- people ---------------------------------------------------------------------------------------


def sessions(usernames: list[str]) -> dict[str, str]:
    """Sign each user in (staff: second factor verified) and return their session keys."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client
    from django_otp import DEVICE_ID_SESSION_KEY
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from queue_app.identity.mfa import holds_staff_power

    keys = {}
    for username in usernames:
        user = User.objects.get(username=username)
        client = Client()
        client.force_login(user)
        if holds_staff_power(user) or settings.MFA_REQUIRED_FOR_ALL:
            device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
            if device is None:
                device = TOTPDevice.objects.create(user=user, name="demo", confirmed=True)
            session = client.session
            session[DEVICE_ID_SESSION_KEY] = device.persistent_id
            session.save()
        keys[username] = client.cookies[settings.SESSION_COOKIE_NAME].value
    return keys


def unverified_session(username: str, *, enrolled: bool) -> str:
    """A staff member signed in with a password only: enrolled (a device, asked for a code) or
    not yet (sent to enrolment)."""
    from django.contrib.auth.models import User
    from django.test import Client
    from django_otp.plugins.otp_totp.models import TOTPDevice

    user, _ = User.objects.get_or_create(
        username=username, defaults={"is_staff": True, "first_name": username.title()}
    )
    if enrolled and not TOTPDevice.objects.filter(user=user, confirmed=True).exists():
        TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    client = Client()
    # Django's own force_login: the suite's (tests/conftest.py) would verify the factor too.
    from django.contrib.auth import login
    from django.http import HttpRequest

    request = HttpRequest()
    request.session = client.session
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session.save()
    return request.session.session_key or ""


def cookies_for(base_url: str, session_key: str | None) -> list[dict[str, Any]]:
    """The cookie a browser context needs to be signed in with session_key (none: anonymous)."""
    from django.conf import settings

    if not session_key:
        return []
    return [{"name": settings.SESSION_COOKIE_NAME, "value": session_key, "url": base_url}]


# -- the server -----------------------------------------------------------------------------------


def database_url() -> str:
    """The URL of the database Django's default connection uses now (a test database too)."""
    from django.db import connection

    from tests.worker.conftest import database_url as url_for

    return url_for(connection.settings_dict)


@contextmanager
def serve(log_path: Path, *, workers: int = 2) -> Iterator[str]:
    """gunicorn on the current database, production settings over http; yield its base URL."""
    sys.path.insert(0, str(PROJECT_DIR))
    from bench.common import start_web, stop_process

    env = {
        **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "reviewconsole.settings_test",
        "DEBUG": "false",
        "LOG_LEVEL": "WARNING",
    }
    web, port = start_web(env, workers, log_path, wait_seconds=120)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(web)


@contextmanager
def scratch_database(name: str) -> Iterator[None]:
    """A database of its own beside the development one (migrated from scratch), dropped after:
    what the scripts seed and photograph, never the demo someone runs under `make run`."""
    from django.db import connection

    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    old = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old, verbosity=0)
