"""Take docs/item-deadline-subject.png at 1366 px; not a test.

Not collected by the suite (no test_ prefix). Run it on purpose:
    .venv/bin/python -m pytest tests/clocks/item_deadline_screens.py -p no:cacheprovider -q
An item page whose lease status box carries the deadline and whose customer has history in two
queues the reviewer works (and one she does not, which the page leaves out).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from queue_app.models import Queue
from queue_app.services import claim_next, submit_decision
from tests.clocks.helpers import add_hold_reasons, item
from tests.conftest import make_queue, shown_hash

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _decide(queue, who, it, verdict, reason):
    lease = claim_next(queue=queue, reviewer=who)
    assert lease.pk == it.pk
    submit_decision(
        item_id=it.pk,
        reviewer=who,
        lease_token=lease.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(lease),
        note="",
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_take_item_deadline_screenshot(live_server, page):
    group = Group.objects.create(name="Reviewers")
    escalation = make_queue("escalation", group=group)
    kyc = make_queue("kyc", group=group, escalation_queue=escalation)
    recon = make_queue("reconciliation", group=group, escalation_queue=escalation)
    aml = make_queue("aml")  # alice does not review it: its item never shows
    Queue.objects.filter(pk=kyc.pk).update(name="KYC checks")
    Queue.objects.filter(pk=recon.pk).update(name="Reconciliation exceptions")
    add_hold_reasons(kyc)
    alice, bob, carol = (
        User.objects.create_user(n, first_name=n.title()) for n in ("alice", "bob", "carol")
    )
    for u in (alice, bob, carol):
        u.groups.add(group)

    now = timezone.now()
    key = "CUS-00042"
    old_kyc = item(kyc, "h1", subject="KYC check — Grace Hopper (2025 renewal)", subject_key=key)
    _decide(kyc, bob, old_kyc, "approve", "verified")
    recon_item = item(
        recon,
        "h2",
        subject="Statement line BR448120 — G. Hopper",
        subject_key=key,
        payload={"ledger_entity": "ACME-CORP", "variance_amount": "12.50"},
    )
    _decide(recon, carol, recon_item, "reject", "fraud")
    item(aml, "h3", subject="AML alert — G. Hopper", subject_key=key)
    item(recon, "h4", subject="Statement line BR448311 — G. Hopper", subject_key=key)

    current = item(
        kyc,
        "now",
        subject="KYC check — Grace Hopper",
        subject_key=key,
        priority=5,
        due_at=now + timedelta(hours=2, minutes=10, seconds=40),
        payload={
            "applicant": {"name": "Grace Hopper", "country": "US", "date_of_birth": "1906-12-09"},
            "document": {"type": "passport", "number": "X1234567", "expires": "2031-04-30"},
            "checks": [
                {"name": "sanctions", "result": "clear"},
                {"name": "pep", "result": "clear"},
            ],
        },
    )
    lease = claim_next(queue=kyc, reviewer=alice)
    assert lease.pk == current.pk

    client = Client()
    client.force_login(alice)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/items/{current.pk}/")
    page.locator("details.hold-panel").evaluate("d => d.open = true")
    page.screenshot(path=str(DOCS / "item-deadline-subject.png"), full_page=True)
