"""Second factor for staff: the gate on every admin and /ops/ route, enrolment, recovery codes,
throttling, resets, and the two switches (everyone; trust the provider's amr)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from queue_app.identity import oidc
from queue_app.selectors.access_timeline import describe, history_events
from tests.identity.conftest import current_code, password_client
from tests.security.routes import all_routes

pytestmark = pytest.mark.django_db

MFA = "/accounts/mfa/"
SETUP = "/accounts/mfa/setup/"
OPEN = {"admin/login/", "admin/logout/"}


def gated_paths() -> list[tuple[str, str]]:
    """(method, path) for every admin and /ops/ route, arguments filled with 1."""
    found = []
    for route in all_routes():
        pattern = route.pattern
        if not pattern.startswith(("admin", "ops/")) or pattern in OPEN:
            continue
        path = "/" + re.sub(r"<[^>]+>|\(\?P<\w+>[^)]*\)", "1", pattern).replace("^", "")
        path = path.replace("$", "").replace(".*", "x")
        method = "post" if path.endswith(("/retry/", "/overturn/")) else "get"
        found.append((method, path))
    return found


def test_the_walk_reaches_the_overturn_ops_and_the_history():
    paths = {path for _, path in gated_paths()}
    assert "/admin/queue_app/decision/1/overturn/" in paths
    assert "/ops/" in paths and "/ops/effect-jobs/1/retry/" in paths
    assert "/admin/access-history/" in paths and len(paths) > 80


def test_staff_without_a_second_factor_reach_no_admin_or_ops_route(staff):
    staff.user_permissions.set(Permission.objects.all())
    client = password_client(staff, "pw-sam")
    wrong = {}
    for method, path in gated_paths():
        response = getattr(client, method)(path)
        if response.status_code != 302 or not response["Location"].startswith(MFA + "?next="):
            wrong[path] = response.status_code
    assert not wrong, wrong


def test_the_gate_sends_a_staff_member_without_a_device_on_to_enrolment(staff):
    client = password_client(staff, "pw-sam")
    response = client.get("/admin/", follow=True)
    assert response.redirect_chain[-1][0].startswith(SETUP)
    assert "Set up a second factor" in response.content.decode()


def test_reviewers_are_not_asked_unless_everyone_must(alice, settings):
    client = password_client(alice, "pw-alice")
    assert client.get("/").status_code == 200
    settings.MFA_REQUIRED_FOR_ALL = True
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith(MFA)
    # Sign-in pages, the API and health stay open.
    assert client.get(SETUP).status_code == 200
    assert client.get("/healthz").status_code == 200


def enrol(client: Client, user: User) -> list[str]:
    page = client.get(SETUP)
    assert page.status_code == 200
    html = page.content.decode()
    assert "<svg" in html and "data:" not in html  # inline SVG, nothing the CSP blocks
    device = TOTPDevice.objects.get(user=user, confirmed=False)
    done = client.post(SETUP, {"code": current_code(device), "next": "/admin/"})
    assert done.status_code == 200, done.content.decode()[:2000]
    return re.findall(r"<li><code>([0-9a-f]{10})</code></li>", done.content.decode())


def test_enrolment_confirms_the_device_shows_ten_codes_once_and_opens_the_admin(staff):
    client = password_client(staff, "pw-sam")
    codes = enrol(client, staff)
    assert len(codes) == 10 and len(set(codes)) == 10
    assert TOTPDevice.objects.get(user=staff).confirmed
    assert client.get("/admin/").status_code == 200
    # Shown once: enrolment is over, and the codes are on no page any more.
    again = client.get(SETUP, follow=True)
    assert not any(code in again.content.decode() for code in codes)


def test_enrolment_refuses_a_wrong_code_with_words(staff):
    client = password_client(staff, "pw-sam")
    client.get(SETUP)
    response = client.post(SETUP, {"code": "000000"})
    assert response.status_code == 400
    assert "does not match" in response.content.decode()
    assert not TOTPDevice.objects.filter(user=staff, confirmed=True).exists()


@pytest.mark.parametrize("code", ["", "12345", "abcdefgh" * 5, "1234567", "\x00"])
def test_verification_answers_malformed_codes_with_words(staff, code):
    client = password_client(staff, "pw-sam")
    enrol(client, staff)
    fresh = password_client(staff, "pw-sam")
    response = fresh.post(MFA, {"code": code})
    assert response.status_code == 400
    assert fresh.get("/admin/").status_code == 302


def test_a_new_session_verifies_with_the_next_code_and_reaches_the_admin(staff):
    enrol(password_client(staff, "pw-sam"), staff)
    device = TOTPDevice.objects.get(user=staff)
    client = password_client(staff, "pw-sam")
    assert client.get("/admin/").status_code == 302
    response = client.post(MFA, {"code": current_code(device, offset=1), "next": "/admin/"})
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_a_code_already_used_is_refused(staff):
    enrol(password_client(staff, "pw-sam"), staff)
    device = TOTPDevice.objects.get(user=staff)
    code = current_code(device, offset=1)
    assert password_client(staff, "pw-sam").post(MFA, {"code": code}).status_code == 302
    device.refresh_from_db()
    device.throttling_failure_count = 0
    device.save()
    assert password_client(staff, "pw-sam").post(MFA, {"code": code}).status_code == 400


def test_wrong_codes_are_throttled_even_before_a_right_one(staff):
    enrol(password_client(staff, "pw-sam"), staff)
    device = TOTPDevice.objects.get(user=staff)
    client = password_client(staff, "pw-sam")
    assert client.post(MFA, {"code": "000000"}).status_code == 400
    refused = client.post(MFA, {"code": current_code(device, offset=1)})
    assert refused.status_code == 400
    assert "Too many wrong codes" in refused.content.decode()
    assert client.get("/admin/").status_code == 302
    device.refresh_from_db()
    assert device.throttling_failure_count == 1
    # Once the wait is over (moved into the past here, not slept through), a right code works.
    TOTPDevice.objects.filter(pk=device.pk).update(
        throttling_failure_timestamp=timezone.now() - timedelta(minutes=5)
    )
    assert client.post(MFA, {"code": current_code(device, offset=1)}).status_code == 302


def test_a_recovery_code_works_once(staff):
    codes = enrol(password_client(staff, "pw-sam"), staff)
    first = password_client(staff, "pw-sam")
    response = first.post(MFA, {"code": codes[0], "next": "/admin/"}, follow=True)
    assert response.status_code == 200
    assert "9 left" in response.content.decode()
    again = password_client(staff, "pw-sam")
    assert again.post(MFA, {"code": codes[0]}).status_code == 400
    assert StaticDevice.objects.get(user=staff).token_set.count() == 9


def test_another_admin_resets_a_lost_device_and_the_history_says_who(staff, root, root_client):
    enrol(password_client(staff, "pw-sam"), staff)
    confirm = root_client.get(f"/admin/mfa-reset/{staff.pk}/")
    assert confirm.status_code == 200
    assert "Reset the second factor of sam" in confirm.content.decode()
    response = root_client.post(f"/admin/mfa-reset/{staff.pk}/")
    assert response.status_code == 302
    assert not TOTPDevice.objects.filter(user=staff).exists()
    assert not StaticDevice.objects.filter(user=staff).exists()
    rows = [r for r in describe(history_events(user=staff)) if r.action in ("deleted", "removed")]
    assert {r.kind for r in rows} == {"authenticator (TOTP)", "recovery codes"}
    assert {r.by for r in rows} == {f"root (#{root.pk})"}
    # Next sign-in: enrol again.
    assert (
        password_client(staff, "pw-sam")
        .get("/admin/", follow=True)
        .redirect_chain[-1][0]
        .startswith(SETUP)
    )


def test_an_admin_cannot_reset_their_own_device(root, root_client):
    root_client.post(f"/admin/mfa-reset/{root.pk}/")
    assert TOTPDevice.objects.filter(user=root).exists()


def test_staff_without_change_user_cannot_reset(staff, root):
    TOTPDevice.objects.create(user=root, name="phone", confirmed=True)
    vic = User.objects.create_user("vic", is_staff=True)
    client = Client()
    client.force_login(vic)
    assert client.post(f"/admin/mfa-reset/{root.pk}/").status_code == 403
    assert TOTPDevice.objects.filter(user=root).exists()


def _session_from_provider(client: Client, amr: list[str]) -> None:
    session = client.session
    session[oidc.AMR_SESSION_KEY] = amr
    session.save()


def test_the_providers_second_factor_counts_only_when_trusted(staff, settings):
    client = password_client(staff, "pw-sam")
    _session_from_provider(client, ["pwd", "mfa"])
    assert client.get("/admin/").status_code == 302
    settings.OIDC_TRUST_AMR = True
    assert client.get("/admin/").status_code == 200
    _session_from_provider(client, ["pwd"])
    assert client.get("/admin/").status_code == 302
