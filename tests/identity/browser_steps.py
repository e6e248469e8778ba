"""Browser steps other tests share: enrol an authenticator as a person would (codes computed)."""

from __future__ import annotations

import base64
import time

from django_otp.oath import TOTP
from playwright.sync_api import Page, expect


def code_for(secret: str, *, offset: int = 0) -> str:
    """What an authenticator app shows for the key typed from the enrolment page."""
    typed = secret.replace(" ", "")
    computed = TOTP(base64.b32decode(typed + "=" * (-len(typed) % 8)))
    computed.time = time.time() + offset * 30
    return f"{computed.token():06d}"


def enrol_second_factor(page: Page) -> str:
    """On the enrolment page a staff sign-in lands on: confirm a code, continue; return the key."""
    expect(page.locator("#mfa-secret")).to_be_visible()
    secret = page.locator("#mfa-secret").inner_text()
    page.fill("#id_code", code_for(secret))
    page.click("#mfa-form input[type=submit]")
    expect(page.locator("#recovery-codes li")).to_have_count(10)
    page.click("#mfa-continue")
    return secret
