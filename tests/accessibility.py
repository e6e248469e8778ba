"""axe-core in the browser tests: WCAG 2.1 A and AA, zero violations, with a readable report.

axe-playwright-python bundles axe-core, so `make test` needs nothing beyond the Python
dependencies. Playwright evaluates the script through the DevTools protocol, which the page's
Content-Security-Policy does not govern: the pages are checked with their real policy on.
"""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

# WCAG 2.0 and 2.1, levels A and AA: what the console promises.
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

_axe = Axe()


# Every finite animation and transition on the page has ended (an infinite one, a spinner,
# never does and is not waited for). axe reads computed colours: in the 150 ms of a theme
# switch's fade a link is neither its light nor its dark colour, and the ratio axe measures
# belongs to no theme anyone sees for longer than a blink.
_SETTLED = """() => document.getAnimations().every(
    (a) => a.playState !== "running" || a.effect.getComputedTiming().endTime === Infinity)"""


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """Run axe-core on the page once its transitions have ended; return its violations."""
    page.wait_for_function(_SETTLED)
    options = {"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]}
    return list(_axe.run(page, options=options).response["violations"])


def describe(violations: list[dict[str, Any]]) -> str:
    """Say what failed: rule, impact, help, the help URL, and each offending node."""
    lines = []
    for violation in violations:
        lines.append(
            f"- {violation['id']} ({violation.get('impact')}): {violation['help']} "
            f"<{violation['helpUrl']}>"
        )
        for node in violation["nodes"][:8]:
            summary = " ".join((node.get("failureSummary") or "").split())
            lines.append(f"    at {node['target']}: {summary[:300]}")
        if len(violation["nodes"]) > 8:
            lines.append(f"    ... and {len(violation['nodes']) - 8} more nodes")
    return "\n".join(lines)


def assert_accessible(page: Page, what: str) -> None:
    """Fail with axe's findings unless the page has no WCAG 2.1 A/AA violation."""
    violations = axe_violations(page)
    if violations:
        pytest.fail(
            f"axe-core found {len(violations)} WCAG 2.1 A/AA violation(s) on {what} "
            f"({page.url}):\n{describe(violations)}",
            pytrace=False,
        )
