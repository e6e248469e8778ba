"""The `?` dialog names every single-key shortcut the console's scripts answer."""

from __future__ import annotations

import re
from pathlib import Path

from django.template.loader import render_to_string

SCRIPTS = Path(__file__).resolve().parents[2] / "static" / "console"
# `key === "x"`, `event.key !== "x"`, and the verdict table `{ a: "approve", ... }`.
KEY_TEST = re.compile(r"""key\s*[!=]==\s*"(.)\"""")
VERDICT_TABLE = re.compile(r"VERDICT_KEYS\s*=\s*\{([^}]*)\}")


def handled_keys() -> set[str]:
    """Return every one-character key a console script acts on."""
    keys: set[str] = set()
    for script in SCRIPTS.glob("*.js"):
        text = script.read_text()
        keys.update(KEY_TEST.findall(text))
        for table in VERDICT_TABLE.findall(text):
            keys.update(re.findall(r"(\w)\s*:", table))
    return keys


def test_every_key_the_scripts_answer_is_in_the_dialog():
    html = render_to_string("console/shortcuts.html", {"task": object()}, using="jinja2")
    shown = set(re.findall(r"<kbd>(.+?)</kbd>", html))
    keys = handled_keys()
    assert {"a", "r", "e", "n", "s", "v", "c", "t", "u", "o", "?"} <= keys  # the scan works
    assert keys - shown == set()


def test_the_reveal_key_is_explained():
    html = render_to_string("console/shortcuts.html", {}, using="jinja2")
    assert re.search(r"<kbd>v</kbd></th><td>Reveal the next blurred image", html)
