"""Charts for the HTML/PDF report as inline SVG strings, drawn here so the report needs no script.

Every label drawn comes from data (model names, domain names) and is XML-escaped; the
output holds only svg/g/rect/line/text/title elements with numeric or fixed attributes.
"""
from __future__ import annotations

from html import escape
from typing import Mapping, Sequence

from ..metrics import percent

PALETTE = ("#3b6ea5", "#d9822b", "#4c9a5b", "#b54a4a", "#7a5ea8", "#8c6d4f", "#c75d9c", "#6b6b6b",
           "#3a9fa8", "#a8a23a")
TYPE_COLOURS = {"gov": "#3b6ea5", "org": "#4c9a5b", "edu": "#7a5ea8", "com": "#d9822b", "other": "#9a9a9a"}


def _t(text: str, limit: int = 40) -> str:
    text = str(text)
    return escape(text if len(text) <= limit else text[:limit - 1] + "…", quote=True)


def interval_bar_chart(metrics: Sequence[tuple[str, str]], groups: Mapping[str, Mapping[str, Mapping]],
                       *, title: str = "") -> str:
    """Grouped bars: one group per metric, one bar per model, each with its 95% interval (Figure 1b style).

    ``metrics`` is [(key, label)], ``groups`` is {model: {metric key: {"value", "ci95"}}}.
    """
    names = list(groups)
    if not names:
        return ""
    width, height = 760, 320
    left, right, top, bottom = 48, 12, 28, 60 + 16 * ((len(names) + 2) // 3)
    height += 16 * ((len(names) + 2) // 3)
    plot_w, plot_h = width - left - right, height - top - bottom
    group_w = plot_w / len(metrics)
    bar_w = min(36.0, (group_w * 0.8) / len(names))
    y = lambda v: top + plot_h * (1 - max(0.0, min(1.0, v)))  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img">']
    if title:
        out.append(f'<title>{_t(title, 200)}</title>')
    for tick in range(0, 101, 20):
        ty = y(tick / 100)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" font-size="11" text-anchor="end">{tick}%</text>')
    for gi, (key, label) in enumerate(metrics):
        gx = left + gi * group_w + (group_w - bar_w * len(names)) / 2
        out.append(f'<text x="{left + gi * group_w + group_w / 2:.1f}" y="{top + plot_h + 18}" font-size="12" '
                   f'text-anchor="middle">{_t(label)}</text>')
        for mi, name in enumerate(names):
            m = groups[name].get(key) or {}
            value = m.get("value")
            x = gx + mi * bar_w
            colour = PALETTE[mi % len(PALETTE)]
            if value is None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{y(0) - 4:.1f}" font-size="9" '
                           f'text-anchor="middle">n/a</text>')
                continue
            out.append(f'<rect x="{x + 1:.1f}" y="{y(value):.1f}" width="{bar_w - 2:.1f}" '
                       f'height="{y(0) - y(value):.1f}" fill="{colour}"><title>{_t(name, 120)}: {percent(value)}'
                       f'</title></rect>')
            lo, hi = (m.get("ci95") or [None, None])[:2]
            if lo is not None and hi is not None:
                cx = x + bar_w / 2
                out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(lo):.1f}" y2="{y(hi):.1f}" stroke="#111"/>')
                for v in (lo, hi):
                    out.append(f'<line x1="{cx - 4:.1f}" x2="{cx + 4:.1f}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                               f'stroke="#111"/>')
    for mi, name in enumerate(names):
        lx = left + (mi % 3) * (plot_w / 3)
        ly = top + plot_h + 36 + 16 * (mi // 3)
        out.append(f'<rect x="{lx:.1f}" y="{ly - 9}" width="10" height="10" fill="{PALETTE[mi % len(PALETTE)]}"/>')
        out.append(f'<text x="{lx + 14:.1f}" y="{ly}" font-size="11">{_t(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def share_bars(rows: Mapping[str, Mapping[str, Mapping]], categories: Sequence[str], *, title: str = "") -> str:
    """One horizontal 100% bar per row (model), split into category shares (domain types)."""
    names = list(rows)
    if not names:
        return ""
    label_w, width, row_h = 170, 760, 24
    height = 40 + row_h * len(names)
    bar_w = width - label_w - 12
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img">']
    if title:
        out.append(f'<title>{_t(title, 200)}</title>')
    for ci, cat in enumerate(categories):
        lx = label_w + ci * 90
        out.append(f'<rect x="{lx}" y="4" width="10" height="10" fill="{TYPE_COLOURS.get(cat, PALETTE[ci])}"/>')
        out.append(f'<text x="{lx + 14}" y="13" font-size="11">.{_t(cat)}</text>')
    for ri, name in enumerate(names):
        ry = 26 + ri * row_h
        out.append(f'<text x="{label_w - 6}" y="{ry + 15}" font-size="11" text-anchor="end">{_t(name, 26)}</text>')
        x = float(label_w)
        for ci, cat in enumerate(categories):
            share = (rows[name].get(cat) or {}).get("share") or 0.0
            w = bar_w * share
            if w <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{ry}" width="{w:.1f}" height="{row_h - 6}" '
                       f'fill="{TYPE_COLOURS.get(cat, PALETTE[ci])}"><title>{_t(name, 120)} .{_t(cat)}: '
                       f'{percent(share)}</title></rect>')
            if w > 34:
                out.append(f'<text x="{x + w / 2:.1f}" y="{ry + 13}" font-size="10" fill="#fff" '
                           f'text-anchor="middle">{percent(share)}</text>')
            x += w
    out.append("</svg>")
    return "".join(out)
