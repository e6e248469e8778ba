"""The design tokens meet WCAG AA in light and in dark (issue 47).

Reads static/ui/tokens.css itself, so a changed colour is measured, not remembered: every pair
the components put text on measures at least 4.5:1 (WCAG 1.4.3) and every control edge or focus
ring at least 3:1 against what it sits on (WCAG 1.4.11). The dark palette is written twice (for
the system preference and for the theme toggle); the two must not drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TOKENS = Path(__file__).resolve().parents[2] / "static" / "ui" / "tokens.css"
NAMES = [
    "bg",
    "surface",
    "surface-2",
    "text",
    "text-muted",
    "border",
    "primary",
    "primary-text",
    "danger",
    "warning",
    "success",
    "info",
    "focus",
]

SURFACES = ("bg", "surface", "surface-2")
# (foreground, background): text, at least 4.5:1.
TEXT_PAIRS = [
    *[
        (fg, bg)
        for fg in ("text", "text-muted", "primary", "danger", "warning", "success", "info")
        for bg in SURFACES
    ],
    ("primary-text", "primary"),
    ("primary-text", "primary-hover"),
    ("primary-hover", "surface"),
    ("header-text", "header-bg"),
    ("header-muted", "header-bg"),
    ("header-text", "accent-strong"),  # admin's --header-link-color on its --primary
    # Badges and flash messages: the tone's colour, and body text, on the tone's tint.
    *[
        (fg, f"{tone}-bg")
        for tone in ("danger", "warning", "success", "info")
        for fg in (tone, "text", "text-muted")
    ],
    # A chosen verdict: the surface colour on the verdict's fill.
    *[("surface", tone) for tone in ("danger", "warning", "success")],
]
# (foreground, background): control edges and the focus ring, at least 3:1.
UI_PAIRS = [
    *[(fg, bg) for fg in ("border", "focus") for bg in SURFACES],
    ("header-text", "header-bg"),  # the focus ring inside the header
]


def _blocks(css: str) -> dict[str, dict[str, str]]:
    """The three colour blocks: light, dark by system preference, dark by the toggle."""
    starts = {
        "light": css.index(":root {"),
        "dark-system": css.index(':root:not([data-theme="light"]) {'),
        "dark-toggle": css.index(':root[data-theme="dark"] {'),
    }
    blocks = {}
    for name, start in starts.items():
        body = css[start : css.index("}", start)]
        blocks[name] = dict(re.findall(r"--rc-color-([\w-]+):\s*(#[0-9a-fA-F]{6})\s*;", body))
    return blocks


def luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


BLOCKS = _blocks(TOKENS.read_text(encoding="utf-8"))


def test_the_ratio_is_computed_as_wcag_defines_it():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the famous near miss


@pytest.mark.parametrize("theme", sorted(BLOCKS))
def test_every_named_token_is_defined_in_each_theme(theme):
    assert set(NAMES) <= set(BLOCKS[theme]), set(NAMES) - set(BLOCKS[theme])


def test_the_two_dark_palettes_are_the_same():
    assert BLOCKS["dark-system"] == BLOCKS["dark-toggle"]


@pytest.mark.parametrize("theme", ["light", "dark-system"])
def test_text_colours_reach_4_5_to_1(theme):
    colours = BLOCKS[theme]
    table = {(fg, bg): round(contrast(colours[fg], colours[bg]), 2) for fg, bg in TEXT_PAIRS}
    failing = {pair: ratio for pair, ratio in table.items() if ratio < 4.5}
    assert failing == {}, f"{theme}: below 4.5:1: {failing}"


@pytest.mark.parametrize("theme", ["light", "dark-system"])
def test_control_edges_and_focus_reach_3_to_1(theme):
    colours = BLOCKS[theme]
    table = {(fg, bg): round(contrast(colours[fg], colours[bg]), 2) for fg, bg in UI_PAIRS}
    failing = {pair: ratio for pair, ratio in table.items() if ratio < 3.0}
    assert failing == {}, f"{theme}: below 3:1: {failing}"
