"""bin/ensure-browser: Playwright's Chromium, else the system's, else install one, else one message.

The script runs in a subprocess with a crafted PATH and PLAYWRIGHT_BROWSERS_PATH, so the real
/usr/bin/chromium and any downloaded build stay out of sight; installers are stand-ins (APT_GET)
or pointed at a closed port (PLAYWRIGHT_DOWNLOAD_HOST), so nothing is installed for real.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import BrowserMissing, ensure_browser, installer

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bin" / "ensure-browser"


def fake_executable(path: Path, body: str = "exit 0") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare_machine(tmp_path: Path) -> dict[str, str]:
    """An environment with no Chromium anywhere and installers that cannot succeed."""
    (tmp_path / "bin").mkdir()
    return {
        **{k: v for k, v in os.environ.items() if k != "REVIEW_BROWSER"},
        "PATH": str(tmp_path / "bin"),
        "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "ms-playwright"),
        "APT_GET": str(fake_executable(tmp_path / "apt-get", "echo 'E: no network' >&2; exit 100")),
        "PLAYWRIGHT_DOWNLOAD_HOST": "http://127.0.0.1:9",
    }


def ensure(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300
    )


def test_it_uses_the_system_chromium(bare_machine, tmp_path):
    chromium = fake_executable(tmp_path / "bin" / "chromium")

    result = ensure(bare_machine)

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{chromium}\n"
    assert result.stderr == f"==> browser: using {chromium}\n"


def test_it_finds_chromium_browser_too(bare_machine, tmp_path):
    chromium = fake_executable(tmp_path / "bin" / "chromium-browser")

    assert ensure(bare_machine).stdout == f"{chromium}\n"


def test_it_prefers_the_chromium_playwright_downloaded(bare_machine, tmp_path):
    fake_executable(tmp_path / "bin" / "chromium")
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tests.browser import playwright_chromium; print(playwright_chromium())",
        ],
        env={**bare_machine, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    downloaded = fake_executable(Path(where))
    assert downloaded.is_relative_to(tmp_path / "ms-playwright")

    assert ensure(bare_machine).stdout == f"{downloaded}\n"


def test_it_honours_review_browser(bare_machine, tmp_path):
    chrome = fake_executable(tmp_path / "opt" / "chrome")

    result = ensure({**bare_machine, "REVIEW_BROWSER": str(chrome)})

    assert result.stdout == f"{chrome}\n"
    assert "from REVIEW_BROWSER" in result.stderr


def test_it_installs_debians_package_as_root(bare_machine, tmp_path):
    # A stand-in apt-get that "installs" chromium where the PATH will find it.
    apt_get = fake_executable(
        tmp_path / "apt-get-ok",
        f'echo "apt-get $*" >> {tmp_path}/apt.log\n'
        f'[ "$1" = install ] && printf "#!/bin/sh\\n" > {tmp_path}/bin/chromium '
        f"&& /bin/chmod +x {tmp_path}/bin/chromium\nexit 0",
    )
    env = {**bare_machine, "APT_GET": str(apt_get)}
    if os.geteuid() != 0:  # the apt-get branch is for root; elsewhere Playwright's installer
        pytest.fail("run the suite as root (as CI does) to exercise the apt-get branch")

    result = ensure(env)

    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{tmp_path}/bin/chromium\n"
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends chromium",
    ]
    assert result.stderr.splitlines() == [
        "==> browser: no Chromium found; installing one "
        "(apt-get update && apt-get install -y chromium)",
        f"==> browser: using {tmp_path}/bin/chromium",
    ]


def test_it_stops_with_one_message_naming_the_command(bare_machine):
    result = ensure(bare_machine)

    assert result.returncode == 1
    assert result.stdout == ""
    message = [line for line in result.stderr.splitlines() if "No Chromium" in line]
    assert len(message) == 1
    assert message[0].startswith("==> browser: No Chromium for the browser tests. Run `")
    assert (
        "apt-get install -y chromium" in message[0] or "playwright install chromium" in message[0]
    )
    assert message[0].endswith("then `make test` again.")


def test_it_refuses_a_review_browser_that_does_not_exist(bare_machine, tmp_path):
    result = ensure({**bare_machine, "REVIEW_BROWSER": str(tmp_path / "nowhere")})

    assert result.returncode == 1
    assert f"REVIEW_BROWSER={tmp_path / 'nowhere'} is not a file" in result.stderr


def test_it_uses_playwrights_installer_when_not_root(tmp_path):
    ran: list[list[str]] = []
    downloaded = tmp_path / "ms-playwright" / "chrome"

    def run(command: list[str]) -> int:
        ran.append(command)
        fake_executable(downloaded)
        return 0

    how = installer(is_root=False, apt_get="/usr/bin/apt-get", python="/venv/bin/python")
    found = ensure_browser(
        env={"PATH": str(tmp_path)}, how=how, run=run, playwright_path=lambda: str(downloaded)
    )

    assert found == downloaded
    assert ran == [["/venv/bin/python", "-m", "playwright", "install", "chromium"]]


def test_without_apt_get_root_uses_playwrights_installer_too():
    how = installer(is_root=True, apt_get=None, python="/venv/bin/python")

    assert how.commands == [["/venv/bin/python", "-m", "playwright", "install", "chromium"]]
    assert how.hint == "/venv/bin/python -m playwright install chromium"


def test_an_installer_that_leaves_no_browser_is_a_clear_failure(tmp_path):
    how = installer(is_root=False, apt_get=None, python="python")

    with pytest.raises(BrowserMissing, match=r"Run `python -m playwright install chromium`"):
        ensure_browser(
            env={"PATH": str(tmp_path)}, how=how, run=lambda c: 0, playwright_path=lambda: None
        )
