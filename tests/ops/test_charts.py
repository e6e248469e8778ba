"""Server-side SVG charts say, in text, what their bars show."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from queue_app.ops.charts import Bar, bar_chart, share_bar

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_it_writes_each_bars_label_and_value_as_text():
    root = parse(bar_chart(title="Leases", bars=[Bar("0", 4), Bar("1", 2), Bar("5+", 0)]))

    groups = root.findall(f"{SVG}g")
    assert [(g.get("data-label"), g.get("data-value")) for g in groups] == [
        ("0", "4"),
        ("1", "2"),
        ("5+", "0"),
    ]
    assert [g.find(f"{SVG}text[@class='value']").text for g in groups] == ["4", "2", "0"]
    assert [g.find(f"{SVG}text[@class='label']").text for g in groups] == ["0", "1", "5+"]


def test_it_draws_bar_heights_in_proportion_to_values():
    root = parse(bar_chart(title="t", bars=[Bar("a", 4), Bar("b", 2), Bar("c", 0)], height=160))

    heights = [float(r.get("height")) for r in root.iter(f"{SVG}rect")]
    assert heights[0] > 0
    assert heights[1] == heights[0] / 2
    assert heights[2] == 0


def test_it_is_accessible_and_carries_no_inline_style_or_script():
    svg = str(bar_chart(title="Decisions per hour", bars=[Bar("09", 3)]))
    root = parse(svg)

    assert root.get("role") == "img"
    assert root.get("aria-label") == "Decisions per hour"
    assert root.find(f"{SVG}title").text == "Decisions per hour"
    assert root.find(f"{SVG}desc").text == "09: 3"
    assert "style=" not in svg
    assert "<script" not in svg


def test_it_draws_an_empty_chart_without_dividing_by_zero():
    root = parse(bar_chart(title="Nothing yet", bars=[Bar("00", 0), Bar("01", 0)]))

    assert [float(r.get("height")) for r in root.iter(f"{SVG}rect")] == [0, 0]


def test_it_escapes_labels():
    svg = str(bar_chart(title="<b>x</b>", bars=[Bar("<script>", 1)]))

    assert "<script>" not in svg
    assert parse(svg).find(f"{SVG}title").text == "<b>x</b>"


def test_it_shows_every_nth_label_but_every_value():
    root = parse(bar_chart(title="t", bars=[Bar(f"{h:02d}", h) for h in range(6)], label_every=3))

    groups = root.findall(f"{SVG}g")
    assert [g.find(f"{SVG}text[@class='label']").text for g in groups] == [
        "00", None, None, "03", None, None
    ]  # fmt: skip
    assert [g.find(f"{SVG}text[@class='value']").text for g in groups] == [
        "0", "1", "2", "3", "4", "5"
    ]  # fmt: skip


def test_share_bar_fills_to_its_share():
    root = parse(share_bar(share=0.25, width=120))

    fill = root.find(f"{SVG}rect[@class='fill']")
    assert float(fill.get("width")) == 30
    assert root.get("aria-label") == "25%"
