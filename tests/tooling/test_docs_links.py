"""The documents point at what is there: every relative link resolves, README stays in the repo.

Links are checked as GitHub renders them: a path relative to the document, and a #fragment
that must name one of the target document's headings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    [
        REPO / "README.md",
        REPO / "CONTRIBUTING.md",
        REPO / "CHANGELOG.md",
        REPO / "bench" / "README.md",
        *(REPO / "docs").glob("*.md"),
    ]
)
# [text](target) and ![alt](target); a code span cannot hold a link, so spans are dropped first.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# Paths named in a document's code spans that must exist (the pages' own modules are left to
# architecture tests: they move with refactors, the scripts and files below are entry points).
NAMED_PATH = re.compile(r"`((?:bench|bin|deploy|docs|examples)/[\w./-]*\w)`")


def _text(path: Path) -> str:
    return FENCE.sub("", path.read_text())


def _slug(heading: str) -> str:
    """Return GitHub's anchor for a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(m[1]) for m in re.finditer(r"^#+ (.*)$", _text(path), re.M)}


def _links(path: Path) -> list[str]:
    return LINK.findall(CODE_SPAN.sub("", _text(path)))


def _name(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_every_relative_link_resolves(document):
    broken = []
    for target in _links(document):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, fragment = target.partition("#")
        resolved = (document.parent / file).resolve() if file else document
        missing_anchor = (
            fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved)
        )
        if not resolved.exists() or missing_anchor:
            broken.append(target)
    assert not broken, f"{_name(document)}: {broken}"


def test_the_readme_links_only_inside_the_repository():
    outside = [t for t in _links(REPO / "README.md") if re.match(r"[a-z]+:", t)]
    assert not outside
    for target in _links(REPO / "README.md"):
        resolved = (REPO / target.partition("#")[0]).resolve()
        assert resolved.is_relative_to(REPO), target


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_the_scripts_and_files_a_document_names_exist(document):
    missing = [p for p in NAMED_PATH.findall(document.read_text()) if not (REPO / p).exists()]
    missing = [p for p in missing if "*" not in p and "<" not in p]
    assert not missing, f"{_name(document)}: {missing}"


def test_the_make_targets_the_readme_names_exist():
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = set(re.findall(r"\bmake ([a-z]+)\b", (REPO / "README.md").read_text()))
    assert named, "the README names its commands"
    assert named <= targets, named - targets


def test_the_benchmark_notebook_stays_in_git_history():
    assert not (REPO / "bench" / "NOTES.md").exists()
    results = (REPO / "bench" / "RESULTS.md").read_text()
    # One run's report: the notebook's dated sections ("## Run of <date>: ...") are not in it.
    assert not re.findall(r"^#+ .*\d{4}-\d{2}-\d{2}", results, re.M)
