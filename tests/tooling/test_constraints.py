"""constraints.txt pins every package the project installs, at the version the suite runs with.

`make install` installs with `-c constraints.txt`, so the environment these tests run in is
the pinned one. What can still drift: a dependency added to pyproject.toml (or pulled in by a
new version of one) without `make lock`, which a fresh machine would install at whatever
version PyPI has that day. These tests walk the project's requirements, its `dev` extra
included, through every installed distribution they name, and compare with the pins.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PROJECT = "reviewconsole"


def pins(text: str) -> dict[str, str]:
    """constraints.txt's `name==version` lines by canonical name; anything else is an error."""
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line)
        assert match, f"constraints.txt line {number} is not name==version: {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in found, f"constraints.txt pins {name} twice"
        found[name] = match.group(2)
    return found


def closure(root: str, extras: set[str]) -> dict[str, str]:
    """Every installed distribution root[extras] needs, by canonical name, with its version."""
    seen: dict[str, str] = {}
    walked: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[str, set[str]]] = [(root, extras)]
    while todo:
        name, wanted = todo.pop()
        dist = metadata.distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        if (key, frozenset(wanted)) in walked:
            continue
        walked.add((key, frozenset(wanted)))
        seen[key] = dist.version
        for spec in dist.requires or []:
            requirement = Requirement(spec)
            marker = requirement.marker
            # A requirement applies when its marker holds with no extra, or with one asked for.
            if marker is not None and not any(
                marker.evaluate({**default_environment(), "extra": extra})
                for extra in {"", *wanted}
            ):
                continue
            todo.append((requirement.name, set(requirement.extras)))
    return seen


@pytest.fixture(scope="module")
def pinned() -> dict[str, str]:
    return pins((REPO / "constraints.txt").read_text())


@pytest.fixture(scope="module")
def installed() -> dict[str, str]:
    """The project's dependencies as installed; the project itself (from the checkout) left out."""
    found = closure(PROJECT, {"dev"})
    found.pop(PROJECT)
    return found


def test_every_installed_dependency_is_pinned_at_its_installed_version(pinned, installed):
    missing = sorted(set(installed) - set(pinned))
    assert not missing, f"not in constraints.txt (run make lock): {missing}"
    differing = {
        name: (pinned[name], version)
        for name, version in installed.items()
        if pinned[name] != version
    }
    assert not differing, f"pinned, installed: {differing} (make install, or make lock)"


def test_nothing_is_pinned_that_the_project_does_not_install(pinned, installed):
    assert not set(pinned) - set(installed), "stale pins: make lock"


def test_comments_and_blank_lines_are_skipped():
    assert pins("# a comment\n\nDjango==5.2.19\n") == {"django": "5.2.19"}


@pytest.mark.parametrize(
    "line", ["Django>=5.2", "Django", "-e .", "Django==5.2 ; python_version<'3'"]
)
def test_a_line_that_is_not_a_pin_is_refused(line):
    with pytest.raises(AssertionError, match="is not name==version"):
        pins(line)


def test_a_package_pinned_twice_is_refused():
    with pytest.raises(AssertionError, match="pins django twice"):
        pins("Django==5.2.19\ndjango==5.2.18\n")


def test_the_closure_follows_extras_and_markers():
    # psycopg[binary] brings psycopg-binary only through its extra; the dev extra brings pytest.
    everything = closure(PROJECT, {"dev"})
    assert {"psycopg", "psycopg-binary", "pytest", "django"} <= set(everything)
    assert "pytest" not in closure(PROJECT, set())
