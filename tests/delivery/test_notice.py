"""The notice to the affected person: written with the statement, delivered once, keyed."""

from __future__ import annotations

import hmac
import json
from datetime import date
from hashlib import sha256

import pytest
from django.contrib.auth.models import Permission, User
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from queue_app import delivery
from queue_app.apply import apply_batch
from queue_app.models import DeliveryChannel, StatementDelivery, StatementOfReasons
from queue_app.services import overturn_decision, retry_statement_deliveries
from tests.conftest import with_overturn_permission
from tests.delivery.conftest import SECRET, SECRET_ENV, built, decide, make_due

pytestmark = pytest.mark.django_db


def _channels(statement: StatementOfReasons) -> set[str]:
    return set(statement.deliveries.values_list("channel", flat=True))


def test_the_jobs_commit_with_the_statement_and_only_then(notifying_posts, alice):
    decision = decide(notifying_posts, alice, note="Asked for a bank password")
    assert not StatementDelivery.objects.exists()
    assert apply_batch() == 1
    statement = StatementOfReasons.objects.get(decision=decision)
    assert _channels(statement) == {DeliveryChannel.NOTICE, DeliveryChannel.TRANSPARENCY_DATABASE}
    assert StatementDelivery.objects.count() == 2


def test_a_statement_the_contract_refuses_is_neither_noticed_nor_submitted(
    notifying_posts, platform, alice
):
    # "document_expired" has no mapping in this queue: the statement is stored with its errors.
    (statement,) = built(notifying_posts, alice, reason="document_expired")
    assert statement.errors
    assert _channels(statement) == set()
    assert delivery.deliver_notices() == 0
    assert platform.requests == []


def test_the_notice_is_delivered_once_with_json_text_html_and_its_key(
    notifying_posts, platform, alice
):
    notifying_posts.statement_policy.out_of_court_settlement = "Disputes Board, disputes.example"
    notifying_posts.statement_policy.save()
    (statement,) = built(notifying_posts, alice, note="Asked for a bank password")
    assert delivery.deliver_notices() == 1
    assert delivery.deliver_notices() == 0
    assert len(platform.requests) == 1
    headers, body = platform.requests[0]
    assert headers["Idempotency-Key"] == statement.puid
    expected = hmac.new(SECRET.encode(), body, sha256).hexdigest()
    assert headers["X-Review-Signature"] == f"sha256={expected}"

    notice = json.loads(body)
    assert notice["type"] == "review.statement_notice"
    assert notice["puid"] == statement.puid
    assert notice["kind"] == "restriction"
    assert notice["item_subject"] == statement.decision.item.subject
    assert notice["restriction"] == {"decision_visibility": ["DECISION_VISIBILITY_CONTENT_REMOVED"]}
    assert notice["territorial_scope"] == ["DE", "FR"]
    assert notice["facts"] == statement.statement["decision_facts"]
    assert notice["ground"]["incompatible_content_ground"] == "Terms of service, section 4 (fraud)"
    assert notice["automated_decision"] == "AUTOMATED_DECISION_NOT_AUTOMATED"
    created = timezone.localdate(statement.created_at)
    assert notice["appeal"] == {
        "until": delivery.add_months(created, 6).isoformat(),
        "window_months": 6,
    }
    assert notice["out_of_court_settlement"] == "Disputes Board, disputes.example"

    text, html = notice["text"], notice["html"]
    for part in (text, html):
        assert statement.puid in part
        assert "Content removed" in part
        assert "DE, FR" in part
        assert delivery.add_months(created, 6).isoformat() in part
        assert "Disputes Board, disputes.example" in part
        assert "Not automated" in part
    assert "no end date (indefinite)" in text
    assert html.startswith('<article lang="en-us">')
    assert "<dt>Ground</dt>" in html

    job = statement.deliveries.get(channel=DeliveryChannel.NOTICE)
    assert job.done_at is not None and job.attempts == 1 and job.receipt == {"status": 200}


def test_the_html_escapes_what_the_reviewer_wrote(notifying_posts, platform, alice):
    built(notifying_posts, alice, note="<script>alert(1)</script>")
    delivery.deliver_notices()
    html = json.loads(platform.requests[0][1])["html"]
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_appeal_window_is_the_queues(notifying_posts, platform, alice):
    notifying_posts.statement_policy.appeal_window_months = 12
    notifying_posts.statement_policy.save()
    (statement,) = built(notifying_posts, alice)
    delivery.deliver_notices()
    until = json.loads(platform.requests[0][1])["appeal"]["until"]
    assert until == delivery.add_months(timezone.localdate(statement.created_at), 12).isoformat()


def test_months_are_added_as_a_calendar_does():
    assert delivery.add_months(date(2026, 8, 31), 6) == date(2027, 2, 28)
    assert delivery.add_months(date(2028, 8, 31), 6) == date(2029, 2, 28)
    assert delivery.add_months(date(2027, 8, 29), 6) == date(2028, 2, 29)
    assert delivery.add_months(date(2026, 1, 15), 12) == date(2027, 1, 15)


def test_a_lifted_restriction_gets_its_notice_naming_the_earlier_one(
    notifying_posts, platform, alice, supervisor
):
    (first,) = built(notifying_posts, alice)
    overturn = overturn_decision(
        decision_id=first.decision_id,
        admin=with_overturn_permission(supervisor),
        corrected_verdict="approve",
        reason_code="reviewer_error",
        note="Not fraud after all",
    )
    while apply_batch():
        pass
    lifted = StatementOfReasons.objects.get(decision_id=overturn.pk)
    assert _channels(lifted) == {DeliveryChannel.NOTICE}
    # One after the other: the lifted notice is not claimed while the restriction's is open.
    assert delivery.deliver_notices() == 1
    assert delivery.deliver_notices() == 1
    notices = [json.loads(body) for _, body in platform.requests]
    assert [n["kind"] for n in notices] == ["restriction", "lifted"]
    assert notices[1]["replaces_puid"] == first.puid
    assert "was reviewed and lifted" in notices[1]["text"]


def test_a_refusing_platform_is_retried_then_a_server_error_later(notifying_posts, platform, alice):
    platform.replies = [503]
    (statement,) = built(notifying_posts, alice)
    assert delivery.deliver_notices() == 1
    job = statement.deliveries.get(channel=DeliveryChannel.NOTICE)
    assert job.done_at is None and not job.dead and job.next_attempt_at > timezone.now()
    assert "503" in job.last_error
    assert delivery.deliver_notices() == 0
    make_due()
    assert delivery.deliver_notices() == 1
    job.refresh_from_db()
    assert job.done_at is not None and job.attempts == 2
    assert platform.keys() == [statement.puid, statement.puid]
    assert list(platform.kept) == [statement.puid]


@pytest.fixture
def staff_retrier(db):
    user = User.objects.create_user("ops-retrier", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="change_statementdelivery"))
    return User.objects.get(pk=user.pk)


def test_a_queue_without_a_webhook_gets_a_dead_notice_an_operator_retries(
    posts, platform, alice, monkeypatch, staff_retrier
):
    monkeypatch.setenv(SECRET_ENV, SECRET)
    (statement,) = built(posts, alice)
    delivery.deliver_notices()
    job = statement.deliveries.get(channel=DeliveryChannel.NOTICE)
    assert job.dead and "has no webhook URL" in job.last_error
    posts.webhook_url, posts.webhook_secret_env = platform.url, SECRET_ENV
    posts.save()
    assert retry_statement_deliveries(delivery_ids=[job.pk], operator=staff_retrier) == 1
    job.refresh_from_db()
    assert not job.dead and job.attempts == 0
    assert delivery.deliver_notices() == 1
    assert platform.keys() == [statement.puid]


def test_retrying_needs_the_permission(posts, alice):
    (statement,) = built(posts, alice)
    delivery.deliver_notices()
    job = statement.deliveries.get(channel=DeliveryChannel.NOTICE)
    with pytest.raises(PermissionDenied):
        retry_statement_deliveries(delivery_ids=[job.pk], operator=alice)
    job.refresh_from_db()
    assert job.dead


def test_a_lifted_notice_waits_for_the_restriction_it_lifts(
    notifying_posts, platform, alice, supervisor
):
    platform.replies = [503]
    (first,) = built(notifying_posts, alice)
    assert delivery.deliver_notices() == 1
    overturn = overturn_decision(
        decision_id=first.decision_id,
        admin=with_overturn_permission(supervisor),
        corrected_verdict="approve",
        reason_code="reviewer_error",
        note="Not fraud after all",
    )
    while apply_batch():
        pass
    lifted = StatementOfReasons.objects.get(decision_id=overturn.pk)
    # Due now, but the restriction's notice is still to be delivered: it waits.
    assert delivery.deliver_notices() == 0
    assert len(platform.requests) == 1

    make_due()
    assert delivery.deliver_notices() == 1
    assert lifted.deliveries.get().attempts == 0
    assert delivery.deliver_notices() == 1
    assert platform.keys() == [first.puid, first.puid, lifted.puid]
