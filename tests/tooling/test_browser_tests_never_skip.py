"""With no Chromium, a browser test errors with the one message; it never skips or passes.

A small browser test runs in a separate pytest with the suite's own launch fixture
(tests.browser.browser_type_launch_args, which tests/conftest.py uses) and no Chromium in sight.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFTEST = "from tests.browser import browser_type_launch_args  # noqa: F401\n"
BROWSER_TEST = """
def test_opens_a_page(page):
    page.set_content("<p>hello</p>")
    assert page.text_content("p") == "hello"
"""


def run_browser_test(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_page.py").write_text(BROWSER_TEST)
    base = {k: v for k, v in os.environ.items() if k != "REVIEW_BROWSER"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "pytest_playwright.pytest_playwright",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=tmp_path,
        # Only the Playwright plugin: no Django, and quick to start.
        env={**base, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def no_chromium(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "bin").mkdir()
    return {
        "PATH": str(tmp_path / "bin"),
        "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "ms-playwright"),
    }


def test_a_browser_test_errors_with_the_message_when_no_chromium_is_found(tmp_path, no_chromium):
    result = run_browser_test(tmp_path, **no_chromium)

    assert result.returncode == 1, result.stdout
    assert "1 error" in result.stdout
    assert "skipped" not in result.stdout and "passed" not in result.stdout
    assert "No Chromium for the browser tests. Run `" in result.stdout


def test_a_browser_test_errors_when_review_browser_names_nothing(tmp_path):
    result = run_browser_test(tmp_path, REVIEW_BROWSER=str(tmp_path / "nowhere"))

    assert result.returncode == 1, result.stdout
    assert "1 error" in result.stdout
    assert f"REVIEW_BROWSER={tmp_path / 'nowhere'} is not a file" in result.stdout


@pytest.mark.browser
def test_a_browser_test_launches_the_chromium_ensure_browser_chose(tmp_path):
    chosen = subprocess.run(
        [sys.executable, str(REPO / "bin" / "ensure-browser")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    result = run_browser_test(tmp_path, REVIEW_BROWSER=chosen)

    assert result.returncode == 0, result.stdout
    assert "1 passed" in result.stdout
