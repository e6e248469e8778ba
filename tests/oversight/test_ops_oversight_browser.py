"""The oversight section of /ops/ with figures in it, checked by axe-core (WCAG 2.1 A and AA)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.accessibility import assert_accessible
from tests.console.conftest import browser_login
from tests.identity.browser_steps import enrol_second_factor
from tests.oversight.conftest import decided, many

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_oversight_section_is_accessible_with_figures(
    page: Page, live_server, screen, alice, bob, robot
):
    User.objects.create_superuser("root", password="pw-root")
    many(screen, alice, 4, followed=4, view="shown", confidence="0.92")
    many(screen, bob, 4, followed=1, view="not_shown", confidence="0.40")
    decided(screen, robot, suggested="approve", verdict="approve", view="automatic",
            confidence="0.99")  # fmt: skip

    browser_login(page, live_server, "root")
    page.goto(f"{live_server.url}/ops/")
    enrol_second_factor(page)
    page.goto(f"{live_server.url}/ops/#oversight")

    section = page.locator("#oversight-screen")
    expect(
        section.get_by_role("table", name="Automatic decisions checked by blind QA")
    ).to_be_visible()
    # 5 of 8: 62.5 %, written as Python rounds it (half to even).
    expect(section.get_by_role("row", name="The team 8 62% 31% to 86%")).to_be_visible()
    assert_accessible(page, "/ops/ with the oversight figures")
