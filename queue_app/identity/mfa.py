"""Second factor (django-otp): TOTP devices, single-use recovery codes, the gate and resets.

A session is verified when django-otp's login() recorded a device for it (request.user.
is_verified()), or, with OIDC_TRUST_AMR, when the provider's ID token said it checked a second
factor. Wrong codes are throttled by django-otp itself: each device waits 1, 2, 4, ... seconds
after consecutive failures (OTP_TOTP_THROTTLE_FACTOR), and says so instead of checking.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from typing import Any

import pghistory
import qrcode
import qrcode.image.svg
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from django_otp import devices_for_user
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from queue_app.identity import oidc
from queue_app.selectors.accounts import user_holds_power
from queue_app.services.access import hold_permission

#: Never gated: signing in and out, enrolment itself, the provider's callback, static files,
#: the API (bearer tokens: an API client's powers are its scopes, granted in the gated admin)
#: and the machine endpoints. Every other path is gated for a holder of a staff power.
OPEN_PREFIXES = ("/accounts/", "/oidc/", "/static/", "/api/")
OPEN_PATHS = ("/admin/login/", "/admin/logout/", "/metrics", "/healthz")
OPEN_PATHS_NAMED = ("login", "logout", "mfa-verify", "mfa-setup")
RECOVERY_DEVICE_NAME = "recovery codes"
TOTP_DEVICE_NAME = "authenticator app"


class MfaError(Exception):
    """A code that does not verify; its message is for the person who typed it."""


def holds_staff_power(user: Any) -> bool:
    """Whether the user holds a staff power: staff, superuser, or any permission, groups too.

    The one rule of who must prove a second factor (identity_sql._HOLDS_POWER). The session's read
    brings the answer along with the user (identity/sessions.py); any other user object asks.
    """
    if not user.is_authenticated:
        return False
    known = getattr(user, "holds_power", None)
    if known is None:
        known = user_holds_power(user.pk)
    return bool(known)


def is_gated(path: str) -> bool:
    """Whether a path is behind the gate (every path but signing in, the API and machines')."""
    return not (path.startswith(OPEN_PREFIXES) or path in OPEN_PATHS)


def needs_second_factor(request: HttpRequest) -> bool:
    """Whether the signed-in user must prove a second factor and this session has not.

    A holder of a staff power always, on every gated path: powers are exercised on console
    pages too (an adjudication overturns), and a page that gains one later is covered without
    naming it. Everyone else only with MFA_REQUIRED_FOR_ALL.
    """
    user = request.user
    if not user.is_authenticated:
        return False
    if not (settings.MFA_REQUIRED_FOR_ALL or holds_staff_power(user)):
        return False
    if user.is_verified():  # type: ignore[attr-defined]  # django-otp adds it
        return False
    return not (settings.OIDC_TRUST_AMR and oidc.provider_second_factor(request))


def confirmed_totp(user: User) -> TOTPDevice | None:
    """The user's enrolled authenticator, if any."""
    return TOTPDevice.objects.filter(user=user, confirmed=True).first()


def pending_totp(user: User) -> TOTPDevice:
    """The unconfirmed device enrolment shows (the same one until confirmed, so a reload
    does not change the QR code under the person scanning it)."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=TOTP_DEVICE_NAME, confirmed=False)
    return device


def qr_svg(device: TOTPDevice) -> str:
    """The device's otpauth:// URL as inline SVG markup: drawn paths, nothing the page's
    Content-Security-Policy would block (no data: URI, no style)."""
    image = qrcode.make(device.config_url, image_factory=qrcode.image.svg.SvgPathImage)
    return image.to_string(encoding="unicode")


def secret_text(device: TOTPDevice) -> str:
    """The key in base32, in groups of four, for typing into an app by hand."""
    key = base64.b32encode(device.bin_key).decode().rstrip("=")
    return " ".join(key[i : i + 4] for i in range(0, len(key), 4))


@dataclass(frozen=True)
class Verified:
    device: TOTPDevice | StaticDevice
    recovery_codes_left: int | None = None


def _check(device: TOTPDevice | StaticDevice, code: str) -> bool:
    allowed, details = device.verify_is_allowed()
    if not allowed:
        wait = ""
        if details and details.get("locked_until"):
            seconds = max(1, int((details["locked_until"] - timezone.now()).total_seconds()) + 1)
            wait = f" Wait {seconds} second{'s' if seconds != 1 else ''} and try again."
        raise MfaError(f"Too many wrong codes in a row.{wait}")
    return bool(device.verify_token(code))


def verify_code(*, user: User, code: str) -> Verified:
    """Check a six-digit code from the authenticator, or a recovery code (used up)."""
    code = "".join(code.split())
    if not code.isascii() or not code.isalnum() or len(code) > 16:
        raise MfaError("Enter the 6-digit code from your authenticator app, or a recovery code.")
    if code.isdigit() and len(code) == 6:
        device = confirmed_totp(user)
        if device is None:
            raise MfaError("You have no authenticator enrolled.")
        if _check(device, code):
            return Verified(device)
        raise MfaError("That code is not right (or was already used). Try the next one.")
    recovery = StaticDevice.objects.filter(user=user, confirmed=True).first()
    if recovery is None:
        raise MfaError("That is not a code we know.")
    # verify_token deletes the matched token: each recovery code works once.
    if _check(recovery, code.lower()):
        return Verified(recovery, recovery.token_set.count())
    raise MfaError("That recovery code is not right or was already used.")


def enrol_totp(*, user: User, device: TOTPDevice, code: str) -> list[str]:
    """Confirm the scanned device with its first code; return new recovery codes (shown once)."""
    code = "".join(code.split())
    if not (code.isdigit() and len(code) == 6):
        raise MfaError("Enter the 6-digit code your authenticator app shows for Review Console.")
    if device.user_id != user.pk or device.confirmed:
        raise MfaError("This enrolment is no longer open; start again.")
    if not _check(device, code):
        raise MfaError("That code does not match. Check the app's clock and try the next code.")
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
        device.confirmed = True
        device.save(update_fields=["confirmed"])
        return new_recovery_codes(user=user)


def new_recovery_codes(*, user: User) -> list[str]:
    """Replace the user's recovery codes with MFA_RECOVERY_CODES fresh ones."""
    codes = [secrets.token_hex(5) for _ in range(settings.MFA_RECOVERY_CODES)]
    with transaction.atomic():
        StaticDevice.objects.filter(user=user).delete()
        device = StaticDevice.objects.create(user=user, name=RECOVERY_DEVICE_NAME, confirmed=True)
        StaticToken.objects.bulk_create(StaticToken(device=device, token=c) for c in codes)
    return codes


def reset_second_factor(*, user: User, by: User) -> int:
    """Remove every device of a user who lost theirs (an admin's act, in the access history).

    Refused (PermissionDenied, nothing removed) unless `by` holds auth.change_user as the
    database reads it in this transaction, not only in the view's cached has_perm.
    """
    with transaction.atomic(), pghistory.context(mfa_reset_of=user.pk, mfa_reset_by=by.pk):
        hold_permission(
            user=by,
            perm="auth.change_user",
            refusal="Resetting a second factor needs permission to change users. "
            "Nothing was removed.",
        )
        removed = 0
        for device in devices_for_user(user, confirmed=None):
            device.delete()
            removed += 1
    return removed
