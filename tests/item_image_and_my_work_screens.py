"""Take the screenshots of an item with a blurred image and of My work at 1366 px; not a test.

Not collected by the suite (no test_ prefix). Run it on purpose:
    .venv/bin/python -m pytest tests/item_image_and_my_work_screens.py -p no:cacheprovider -q
It writes docs/item-blurred-image.png and docs/my-work.png.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection, transaction
from django.test import Client
from PIL import Image, ImageDraw

from queue_app.services import claim_next, put_attachment, submit_decision
from tests.attachments.conftest import PDF_BYTES
from tests.conftest import make_queue, shown_hash

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _id_card() -> bytes:
    """A made-up identity card: coloured bands, a face, lines of text."""
    image = Image.new("RGB", (640, 400), "#e8eef7")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 640, 70), fill="#1d4f91")
    draw.text((24, 24), "REPUBLIC OF EXAMPLE  -  IDENTITY CARD", fill="white")
    draw.ellipse((40, 110, 200, 290), fill="#c99a74")
    draw.ellipse((80, 160, 100, 180), fill="#333")
    draw.ellipse((140, 160, 160, 180), fill="#333")
    draw.arc((85, 200, 155, 250), 20, 160, fill="#6b3e26", width=4)
    for n, line in enumerate(
        ["SURNAME  DOE", "GIVEN NAMES  JANE", "BORN  1990-04-12", "NO.  X1234567"]
    ):
        draw.text((240, 120 + n * 40), line, fill="#102040")
    draw.rectangle((0, 340, 640, 400), fill="#c8d6ea")
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=92)
    return out.getvalue()


def _selfie() -> bytes:
    image = Image.new("RGB", (480, 480), "#88a")
    draw = ImageDraw.Draw(image)
    draw.ellipse((140, 90, 340, 330), fill="#d4a27f")
    draw.rectangle((110, 330, 370, 480), fill="#335")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _log_in(page, live_server, user: User) -> None:
    client = Client()
    client.force_login(user)
    page.context.clear_cookies()
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )


def _decide(queue, reviewer, verdict, reason, seconds) -> None:
    item = claim_next(queue=queue, reviewer=reviewer)
    decision = submit_decision(
        item_id=item.pk,
        reviewer=reviewer,
        lease_token=item.lease_token,
        verdict=verdict,
        reason_code=reason,
        evidence_hash=shown_hash(item),
    )
    with transaction.atomic(), connection.cursor() as cursor:  # a plausible handling time
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE queue_app_itemevent SET at = at - make_interval(secs => %s) "
            "WHERE item_id = %s AND kind = 'claimed'",
            [seconds, decision.item_id],
        )
        cursor.execute("SET LOCAL session_replication_role = origin")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_take_blurred_image_and_my_work_screenshots(live_server, page):
    from queue_app.services import create_item

    group = Group.objects.create(name="Reviewers")
    kyc = make_queue("kyc", group=group)
    kyc.name, kyc.sensitive = "KYC documents", True
    kyc.save()
    recon = make_queue(
        "reconciliation", group=group, escalation_queue=make_queue("escalation", group=group)
    )
    recon.name = "Reconciliation exceptions"
    recon.qa_rate = 100  # every decision drawn, so My work has QA agreement to show
    recon.save()
    alice = User.objects.create_user("alice", password="pw-alice", first_name="Alice")
    alice.groups.add(group)
    admin = User.objects.create_superuser("admin", password="pw-admin")

    for n in range(14):
        create_item(
            queue=recon,
            subject=f"ACME statement line {n}",
            payload={"n": n},
            idempotency_key=f"r{n}",
        )
    for n in range(9):
        create_item(
            queue=kyc,
            subject=f"Customer {4100 + n} onboarding",
            payload={"n": n},
            idempotency_key=f"k{n}",
        )
    for n, (verdict, reason) in enumerate(
        [("approve", "verified")] * 6 + [("reject", "fraud")] * 2 + [("escalate", "policy_gap")]
    ):
        _decide(recon, alice, verdict, reason, 40 + 17 * n)
    for n, (verdict, reason) in enumerate(
        [("approve", "verified")] * 4 + [("reject", "document_expired")] * 2
    ):
        _decide(kyc, alice, verdict, reason, 95 + 31 * n)

    # Bob QA-reviews alice's reconciliation decisions, disagreeing once; alice holds an item.
    from datetime import timedelta

    from django.utils import timezone

    from queue_app.models import HoldReason
    from queue_app.services import claim_lane_task, hold_item, record_qa_review

    bob = User.objects.create_user("bob", password="pw-bob")
    bob.groups.add(group)
    n = 0
    while (task := claim_lane_task(queue=recon, kind="qa", user=bob)) is not None:
        verdict = task.decision.verdict if n != 2 else "reject"
        record_qa_review(
            task_id=task.pk,
            user=bob,
            lease_token=task.lease_token,
            verdict=verdict,
            reason_code="verified" if verdict == "approve" else "fraud",
        )
        n += 1
    HoldReason.objects.create(queue=recon, code="awaiting_bank", label="Awaiting the bank")
    held = claim_next(queue=recon, reviewer=alice)
    hold_item(
        item_id=held.pk,
        reviewer=alice,
        lease_token=held.lease_token,
        reason_code="awaiting_bank",
        hold_until=timezone.now() + timedelta(hours=20),
    )

    item, _ = create_item(
        queue=kyc,
        subject="Jane Doe: new account, ID and selfie",
        payload={
            "customer": "C-20931",
            "country": "EX",
            "document": {"type": "identity card", "expires": "2031-04-11"},
        },
        idempotency_key="jane",
    )
    put_attachment(item_id=item.pk, actor=admin, name="id-front.jpg", data=_id_card())
    put_attachment(item_id=item.pk, actor=admin, name="selfie.png", data=_selfie())
    put_attachment(item_id=item.pk, actor=admin, name="utility-bill.pdf", data=PDF_BYTES)

    page.set_viewport_size({"width": 1366, "height": 900})
    _log_in(page, live_server, alice)
    page.goto(f"{live_server.url}/")
    # Claim through the page so the lease is a real one; take the screenshot of Jane's item.
    from queue_app.models import ReviewItem

    ReviewItem.objects.filter(queue=kyc, state="pending").exclude(pk=item.pk).update(priority=-1)
    page.get_by_role("button", name="Next item in KYC documents").click()
    page.wait_for_url(f"{live_server.url}/items/{item.pk}/")
    page.screenshot(path=str(DOCS / "item-blurred-image.png"), full_page=True)

    page.goto(f"{live_server.url}/my-work/?subject=statement+line+1")
    page.screenshot(path=str(DOCS / "my-work.png"), full_page=True)
