"""Which Chromium the browser tests launch, and how `make test` gets one on a fresh machine.

The order works on any machine: a Chromium Playwright already downloaded (~/.cache/ms-playwright,
or PLAYWRIGHT_BROWSERS_PATH), else the system's (`chromium` or `chromium-browser` on PATH), else
install one: Debian's package when running as root with apt-get (Playwright's download site may
be unreachable there, package mirrors are not), Playwright's own installer otherwise. If that
fails too, one message names the command to run.

`bin/ensure-browser` runs `ensure_browser` and prints the path; `make test` hands it to the tests
as REVIEW_BROWSER. The fixture below launches that executable, or, when pytest runs without
make, the one `find_browser` finds; with none, every browser test errors with the message (never
a skip). APT_GET names another apt-get (tests use a stand-in, so nothing is installed for real).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SYSTEM_NAMES = ("chromium", "chromium-browser")
ENV_VAR = "REVIEW_BROWSER"

# Headless, and nothing that phones home or waits on a first-run dialog.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class BrowserMissing(RuntimeError):
    """No Chromium to launch; the message says which command gets one."""


def say(message: str) -> None:
    """Announce a step on stderr (stdout carries only the chosen path)."""
    print(f"==> browser: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Installer:
    """The commands that install Chromium here, and the same in the words a person types."""

    commands: list[list[str]]
    hint: str


def installer(*, is_root: bool, apt_get: str | None, python: str) -> Installer:
    """Return how to install Chromium on this machine."""
    if is_root and apt_get:
        return Installer(
            commands=[
                [apt_get, "update", "-qq"],
                [apt_get, "install", "-y", "-qq", "--no-install-recommends", "chromium"],
            ],
            hint="apt-get update && apt-get install -y chromium",
        )
    command = [python, "-m", "playwright", "install", "chromium"]
    return Installer(commands=[command], hint=shlex.join(command))


def missing_message(how: Installer) -> str:
    """Return the one message for a machine with no Chromium: the command that gets one."""
    return f"No Chromium for the browser tests. Run `{how.hint}`, then `make test` again."


def local_installer() -> Installer:
    """Return how to install Chromium on the machine we are running on."""
    return installer(
        is_root=os.geteuid() == 0,
        apt_get=shutil.which(os.environ.get("APT_GET", "apt-get")),
        python=sys.executable,
    )


def find_browser(*, playwright_path: str | None, path: str | None) -> Path | None:
    """Return Playwright's own Chromium if downloaded, else the system's, else None."""
    if playwright_path and Path(playwright_path).is_file():
        return Path(playwright_path)
    for name in SYSTEM_NAMES:
        found = shutil.which(name, path=path)
        if found:
            return Path(found)
    return None


def playwright_chromium() -> str | None:
    """Return where Playwright keeps its own Chromium (downloaded or not)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # the dev packages are not installed yet
        return None
    with sync_playwright() as playwright:
        return playwright.chromium.executable_path


def existing_browser(*, env: Mapping[str, str], playwright_path: str | None) -> Path | None:
    """Return the Chromium REVIEW_BROWSER names, else the one find_browser finds, else None."""
    chosen = env.get(ENV_VAR)
    if chosen:
        if not Path(chosen).is_file():
            raise BrowserMissing(f"{ENV_VAR}={chosen} is not a file. Unset it or fix the path.")
        return Path(chosen)
    return find_browser(playwright_path=playwright_path, path=env.get("PATH"))


def ensure_browser(
    *,
    env: Mapping[str, str],
    how: Installer,
    run: Callable[[list[str]], int],
    playwright_path: Callable[[], str | None] = playwright_chromium,
) -> Path:
    """Return a Chromium to launch, installing one if the machine has none."""
    found = existing_browser(env=env, playwright_path=playwright_path())
    if found is None:
        say(f"no Chromium found; installing one ({how.hint})")
        for command in how.commands:
            status = run(command)
            if status != 0:
                say(f"`{shlex.join(command)}` exited with status {status}")
                raise BrowserMissing(missing_message(how))
        found = existing_browser(env=env, playwright_path=playwright_path())
    if found is None:
        raise BrowserMissing(missing_message(how))
    say(f"using {found}" + (f" (from {ENV_VAR})" if env.get(ENV_VAR) else ""))
    return found


def run_to_stderr(command: list[str]) -> int:
    """Run an installer with its output on stderr (stdout carries only the chosen path)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(command, stdout=sys.stderr, env=env, check=False).returncode


def main() -> int:
    """Print the path of the Chromium to launch; exit 1 with one message if there is none."""
    try:
        path = ensure_browser(env=os.environ, how=local_installer(), run=run_to_stderr)
    except BrowserMissing as exc:
        print(f"==> browser: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


@pytest.fixture(scope="session")
def browser_type_launch_args(
    browser_type_launch_args: dict[str, Any], browser_type: Any
) -> dict[str, Any]:
    """Launch the Chromium `make test` chose; with none, fail loudly with the command to run."""
    try:
        executable = existing_browser(env=os.environ, playwright_path=browser_type.executable_path)
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    if executable is None:
        pytest.fail(missing_message(local_installer()), pytrace=False)
    return {**browser_type_launch_args, "executable_path": str(executable), "args": CHROMIUM_ARGS}
