"""Hostile input to the new identity routes: second-factor codes, history filters, the callback.

Never a 5xx, never a device confirmed or a session verified by a code nobody computed, always
words (or a redirect) in answer.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.identity.conftest import password_client
from tests.security.strategies import FUZZ, form, form_field

pytestmark = pytest.mark.django_db
FIXED = settings(FUZZ, derandomize=True)
codes = st.one_of(st.from_regex(r"\A[0-9]{6}\Z"), st.from_regex(r"\A[0-9a-f]{10}\Z"))


@pytest.fixture
def enrolled(staff) -> Client:
    """A staff session (password only) whose user has an authenticator."""
    TOTPDevice.objects.create(user=staff, name="phone", confirmed=True)
    return password_client(staff, "pw-sam")


@FIXED
@given(code=form_field(codes), next_url=form_field(st.sampled_from(["/admin/", "//evil.test/"])))
def test_verification_never_fails_loudly_or_lets_a_guess_in(enrolled, code, next_url):
    with transaction.atomic():
        response = enrolled.post("/accounts/mfa/", form(code=code, next=next_url))
        assert response.status_code in (302, 400), response.status_code
        if response.status_code == 302:  # a six-digit guess matched: one in a million per try
            assert not response["Location"].startswith("//evil")
        else:
            assert enrolled.get("/admin/").status_code == 302
        transaction.set_rollback(True)


@FIXED
@given(code=form_field(codes))
def test_enrolment_never_fails_loudly_or_confirms_a_guess(staff, code):
    client = password_client(staff, "pw-sam")
    client.get("/accounts/mfa/setup/")
    with transaction.atomic():
        response = client.post("/accounts/mfa/setup/", form(code=code))
        assert response.status_code in (200, 400)
        if response.status_code == 400:
            assert not TOTPDevice.objects.filter(user=staff, confirmed=True).exists()
        transaction.set_rollback(True)


filter_value = form_field(st.sampled_from(["kyc", "alice", "2026-11-30", ""]))


@FIXED
@given(
    user=filter_value,
    by=filter_value,
    queue_slug=filter_value,
    since=filter_value,
    until=filter_value,
    page=filter_value,
)
def test_history_filters_answer_200_or_400(
    root_client, queue, user, by, queue_slug, since, until, page
):
    query = form(user=user, by=by, queue=queue_slug, since=since, until=until, page=page)
    for path in ("/admin/access-history/", "/admin/access-history.csv"):
        response = root_client.get(path, query)
        assert response.status_code in (200, 400), (path, query, response.status_code)


@FIXED
@given(code=form_field(st.text(max_size=20)), state=form_field(st.text(max_size=20)))
def test_the_callback_without_sign_on_configured_is_a_404(code, state, db):
    response = Client().get("/oidc/callback/", form(code=code, state=state))
    assert response.status_code in (400, 404)
