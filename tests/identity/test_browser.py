"""In a real browser: sign in through the provider and out again; enrol and use a second factor
with codes computed here; read a queue's access history (its screenshot stays in
test-artifacts/; the docs' picture comes from `make screenshots`)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from io import StringIO

import pghistory
import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice
from playwright.sync_api import Page, expect

from queue_app.identity import oidc
from queue_app.models import Queue
from tests.conftest import screenshot
from tests.identity.browser_steps import code_for
from tests.identity.provider import CLIENT_ID, CLIENT_SECRET, provider  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_signs_in_through_the_provider_and_out_again(
    provider,  # noqa: F811
    live_server,
    settings,
    page: Page,
    queue,
):
    provider.register(f"{live_server.url}/oidc/callback/")
    provider.user("dana", "pw-dana", groups=["kyc-reviewers"])
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_GROUP_MAP = {"kyc-reviewers": "Reviewers"}
    settings.OIDC_PROVIDER_NAME = "Test IdP"
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "queue_app.identity.oidc.ReviewOidcBackend",
    ]
    oidc.forget_discovery()
    Queue.objects.filter(pk=queue.pk).update(name="KYC checks")

    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    expect(page.locator("h1")).to_have_text("Test Identity Provider")
    page.fill("#provider-username", "dana")
    page.fill("#provider-password", "pw-dana")
    page.click("#provider-submit")

    expect(page.locator("#user-tools")).to_contain_text("Signed in as")
    expect(page.locator("#content")).to_contain_text("KYC checks")
    assert page.url == f"{live_server.url}/"
    assert list(User.objects.get(username="dana").groups.values_list("name", flat=True)) == [
        "Reviewers"
    ]

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(f"{live_server.url}/accounts/login/")
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(f"{live_server.url}/accounts/login/?next=/")
    oidc.forget_discovery()


def test_staff_enrol_an_authenticator_and_prove_it_at_the_next_sign_in(live_server, page: Page):
    User.objects.create_user("sam", password="pw-sam", is_staff=True, is_superuser=True)
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "sam")
    page.fill("#id_password", "pw-sam")
    page.click("input[type=submit]")

    expect(page.locator("h1")).to_have_text("Set up a second factor")
    expect(page.locator("#mfa-qr svg")).to_be_visible()
    secret = page.locator("#mfa-secret").inner_text()
    page.fill("#id_code", "000000")
    page.click("input[type=submit]")
    expect(page.locator("#mfa-error")).to_contain_text("does not match")
    _past_the_wait()
    page.fill("#id_code", code_for(secret))
    page.click("input[type=submit]")

    expect(page.locator("h1")).to_have_text("Recovery codes")
    expect(page.locator("#recovery-codes li")).to_have_count(10)
    page.click("#mfa-continue")
    expect(page.locator("#site-name")).to_contain_text("Review Console administration")

    page.locator("#logout-form button").click()
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "sam")
    page.fill("#id_password", "pw-sam")
    page.click("input[type=submit]")
    expect(page.locator("h1")).to_have_text("Second factor")
    page.fill("#id_code", "123456")
    page.click("input[type=submit]")
    expect(page.locator("#mfa-error")).to_be_visible()
    # django-otp's throttle: a wrong code makes the next attempt wait (1 s here, doubling).
    page.fill("#id_code", code_for(secret, offset=1))
    page.click("input[type=submit]")
    expect(page.locator("#mfa-error")).to_contain_text("Too many wrong codes")
    _past_the_wait()
    page.fill("#id_code", code_for(secret, offset=1))
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_contain_text("Review Console administration")


def _past_the_wait() -> None:
    """Move the last wrong code's time back, rather than sleep through django-otp's wait."""
    TOTPDevice.objects.filter(user__username="sam").update(
        throttling_failure_timestamp=timezone.now() - timedelta(minutes=5)
    )


def _history_story(queue: Queue) -> None:
    """A week at a bank: who was given (and lost) review of the KYC queue, and its settings."""
    root = User.objects.get(username="admin")
    seniors = Group.objects.create(name="KYC seniors")
    admin_client = Client()
    admin_client.force_login(root)
    queue.reviewer_groups.add(seniors)
    priya = User.objects.create_user("priya", first_name="Priya")
    admin_client.post(
        f"/admin/auth/user/{priya.pk}/change/",
        {
            "username": "priya",
            "first_name": "Priya",
            "is_active": "on",
            "groups": [seniors.pk],
            "date_joined_0": "2026-11-02",
            "date_joined_1": "09:00:00",
        },
    )
    with connection.cursor() as cursor:  # a DBA, straight into the table
        cursor.execute(
            "INSERT INTO auth_user_groups (user_id, group_id) "
            "SELECT id, %s FROM auth_user WHERE username = 'alice'",
            [seniors.pk],
        )
    call_command(
        "create_api_client",
        "onboarding-intake",
        "--scope",
        "intake",
        "--queue",
        "kyc",
        "--created-by",
        "admin",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    # An administrator lengthens the lease (as the admin's save would, with its context).
    with pghistory.context(user=root.pk, username="admin", trace_id=str(uuid.uuid4())):
        queue.lease_ttl = timedelta(minutes=15)
        queue.save(update_fields=["lease_ttl"])


def test_a_queues_access_history_from_its_admin_page(live_server, page: Page, queue, alice):
    User.objects.create_superuser("admin", password="pw-admin")
    _history_story(queue)
    client = Client()
    client.force_login(User.objects.get(username="admin"))
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/admin/queue_app/queue/{queue.pk}/change/")
    page.click("#queue-access-history")
    table = page.locator("#access-history")
    expect(table).to_contain_text("user priya")
    expect(table).to_contain_text("database")
    expect(table).to_contain_text("manage.py create_api_client")
    expect(table).to_contain_text("lease_ttl: 00:05:00 → 00:15:00")
    screenshot(page, "access-history")
