"""Small server-side SVG charts: no script, no CDN, no inline style (colours live in ops.css).

Every bar carries its value and label as text, so a person reads numbers rather than guessing
heights, and a test can check the chart says what the data says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    # Extra CSS class, e.g. to mark buckets at or past the escalation threshold.
    tone: str = ""


def bar_chart(
    *,
    title: str,
    bars: Sequence[Bar],
    width: int = 480,
    height: int = 160,
    label_every: int = 1,
) -> SafeString:
    """Return an accessible SVG bar chart with each bar's value and label written as text."""
    top_pad, bottom_pad, side_pad = 18, 20, 4
    plot_height = height - top_pad - bottom_pad
    slot = (width - 2 * side_pad) / max(len(bars), 1)
    bar_width = max(slot * 0.72, 1.0)
    peak = max((bar.value for bar in bars), default=0)
    summary = ", ".join(f"{bar.label}: {bar.value}" for bar in bars)
    parts = [
        format_html(
            '<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" '
            'width="{}" height="{}" role="img" aria-label="{}">'
            "<title>{}</title><desc>{}</desc>",
            width,
            height,
            width,
            height,
            title,
            title,
            summary,
        ),
        format_html(
            '<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>',
            side_pad,
            top_pad + plot_height,
            width - side_pad,
            top_pad + plot_height,
        ),
    ]
    for index, bar in enumerate(bars):
        bar_height = round(plot_height * bar.value / peak, 1) if peak else 0
        x = round(side_pad + index * slot + (slot - bar_width) / 2, 1)
        centre = round(side_pad + index * slot + slot / 2, 1)
        y = round(top_pad + plot_height - bar_height, 1)
        classes = " ".join(filter(None, ["bar", bar.tone]))
        label = escape(bar.label) if index % label_every == 0 else ""
        parts.append(
            format_html(
                '<g class="{}" data-label="{}" data-value="{}">'
                '<rect x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>'
                '<text class="value" x="{}" y="{}" text-anchor="middle">{}</text>'
                '<text class="label" x="{}" y="{}" text-anchor="middle">{}</text></g>',
                classes,
                bar.label,
                bar.value,
                x,
                y,
                round(bar_width, 1),
                bar_height,
                bar.label,
                bar.value,
                centre,
                y - 4,
                bar.value,
                centre,
                height - 6,
                label,
            )
        )
    parts.append(mark_safe("</svg>"))
    return mark_safe("".join(parts))


def share_bar(*, share: float, width: int = 120, height: int = 10) -> SafeString:
    """Return a thin horizontal bar filled to share (0..1), labelled for screen readers."""
    share = min(max(share, 0.0), 1.0)
    return format_html(
        '<svg class="share" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" '
        'height="{}" role="img" aria-label="{}%"><rect class="track" width="{}" height="{}"/>'
        '<rect class="fill" width="{}" height="{}"/></svg>',
        width,
        height,
        width,
        height,
        round(share * 100),
        width,
        height,
        round(width * share, 1),
        height,
    )
