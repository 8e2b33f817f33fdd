"""Plots as hand-written SVG: RPS against concurrency, and latency percentiles per case.

Rules of this module:
- No plotting dependency: a few dozen lines of SVG text do, and the output is deterministic, so the
  plots can be golden-tested and diffed like the Markdown.
- Input is the report's rows (``load.report.Row``); nothing here reads files or the clock.
- RPS: one line per case over its concurrencies (log2 x axis) when any case has several concurrencies,
  otherwise one horizontal bar per case. Latency: p50, p99 and max bars per case, on a log axis
  (max is often 100x p50).
"""

from __future__ import annotations

import math
from typing import Sequence
from xml.sax.saxutils import escape

__all__ = ["rps_svg", "latency_svg", "PALETTE"]

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_FONT = 'font-family="sans-serif" font-size="11"'


def _label(row) -> str:
    text = " ".join(row.env_values + (row.label,))
    return text if not row.group else f"{row.group}: {text}"


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp:
            return step * exp
    return 10 * exp


def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" font-family="sans-serif" font-size="14">'
        f"{escape(title)}</text>",
    ]
    return "\n".join(head + body + ["</svg>"]) + "\n"


def _bars(rows, title: str) -> str:
    left, right, bar, gap = 260, 80, 16, 6
    width = 760
    height = 40 + len(rows) * (bar + gap) + 30
    top = max(r.record["rps"] for r in rows)
    scale = _nice_max(top)
    plot_w = width - left - right
    body = []
    for i, row in enumerate(rows):
        y = 34 + i * (bar + gap)
        w = plot_w * row.record["rps"] / scale
        body.append(
            f'<text x="{left - 6}" y="{y + bar - 4}" text-anchor="end" {_FONT}>'
            f"{escape(_label(row))} (c{row.concurrency})</text>"
        )
        body.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar}" fill="{PALETTE[i % len(PALETTE)]}"/>')
        body.append(f'<text x="{left + w + 4:.1f}" y="{y + bar - 4}" {_FONT}>{row.record["rps"]:.0f}</text>')
    axis_y = 34 + len(rows) * (bar + gap)
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="black"/>')
    for k in range(5):
        x = left + plot_w * k / 4
        body.append(f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle" {_FONT}>{_fmt(scale * k / 4)}</text>')
    body.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{axis_y + 28}" text-anchor="middle" {_FONT}>'
        "requests per second (2xx)</text>"
    )
    return _svg(width, height, body, title)


def _lines(rows, title: str) -> str:
    width = 820
    height = max(420, 34 + 16 * len(rows) + 60)
    left, right, top_pad, bottom = 70, 300, 34, 50
    plot_w, plot_h = width - left - right, height - top_pad - bottom
    concs = sorted({c for r in rows for c in r.by_concurrency})
    lo, hi = math.log2(concs[0]), math.log2(concs[-1])
    span = (hi - lo) or 1.0
    scale = _nice_max(max(v for r in rows for v in r.by_concurrency.values()))

    def xy(conc: int, rps: float) -> tuple[float, float]:
        x = left + plot_w * ((math.log2(conc) - lo) / span if hi > lo else 0.5)
        return x, top_pad + plot_h * (1 - rps / scale)

    body = [
        f'<line x1="{left}" y1="{top_pad + plot_h}" x2="{left + plot_w}" y2="{top_pad + plot_h}" stroke="black"/>',
        f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{top_pad + plot_h}" stroke="black"/>',
    ]
    for k in range(5):
        y = top_pad + plot_h * (1 - k / 4)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#dddddd"/>')
        body.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" {_FONT}>{_fmt(scale * k / 4)}</text>')
    for conc in concs:
        x, _ = xy(conc, 0)
        body.append(f'<text x="{x:.1f}" y="{top_pad + plot_h + 16}" text-anchor="middle" {_FONT}>{conc}</text>')
    body.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 12}" text-anchor="middle" {_FONT}>'
        "concurrency (connections)</text>"
    )
    body.append(
        f'<text x="16" y="{top_pad + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {top_pad + plot_h / 2:.0f})" {_FONT}>RPS (2xx)</text>'
    )
    for i, row in enumerate(rows):
        colour = PALETTE[i % len(PALETTE)]
        points = [xy(c, v) for c, v in sorted(row.by_concurrency.items())]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        dash = "" if i < len(PALETTE) else ' stroke-dasharray="6 3"'  # colours repeat: dash the second round
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for x, y in points:
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
        ly = top_pad + 4 + i * 16
        body.append(
            f'<line x1="{left + plot_w + 10}" y1="{ly + 5}" x2="{left + plot_w + 24}" y2="{ly + 5}" '
            f'stroke="{colour}" stroke-width="3"{dash}/>'
        )
        body.append(f'<text x="{left + plot_w + 28}" y="{ly + 9}" {_FONT}>{escape(_label(row))}</text>')
    return _svg(width, height, body, title)


def rps_svg(rows: Sequence, *, title: str) -> str:
    """RPS of each row: lines over concurrency if any row has several, else bars."""
    if not rows:
        return _svg(400, 60, [], title)
    if any(len(r.by_concurrency) > 1 for r in rows):
        return _lines(rows, title)
    return _bars(rows, title)


def latency_svg(rows: Sequence, *, title: str) -> str:
    """p50, p99 and max latency (ms) per row at its best concurrency, log-scale bars."""
    if not rows:
        return _svg(400, 60, [], title)
    left, right, bar = 260, 60, 7
    width = 760
    series = (("p50", PALETTE[0]), ("p99", PALETTE[1]), ("max", PALETTE[3]))
    block = bar * len(series) + 8
    height = 40 + len(rows) * block + 50
    plot_w = width - left - right
    values = [v for r in rows for v in (r.record.get("latency_ms", {}).get(k) for k, _ in series) if v]
    lo = 10 ** math.floor(math.log10(min(values))) if values else 0.01
    hi = 10 ** math.ceil(math.log10(max(values))) if values else 1.0
    if hi <= lo:
        hi = lo * 10
    span = math.log10(hi) - math.log10(lo)

    def width_of(v: float) -> float:
        return plot_w * (math.log10(v) - math.log10(lo)) / span

    body = []
    for i, row in enumerate(rows):
        y0 = 34 + i * block
        body.append(
            f'<text x="{left - 6}" y="{y0 + block / 2 + 2:.1f}" text-anchor="end" {_FONT}>'
            f"{escape(_label(row))} (c{row.concurrency})</text>"
        )
        for j, (key, colour) in enumerate(series):
            value = row.record.get("latency_ms", {}).get(key)
            if not value:
                continue
            body.append(
                f'<rect x="{left}" y="{y0 + j * bar}" width="{max(1.0, width_of(value)):.1f}" '
                f'height="{bar - 1}" fill="{colour}"/>'
            )
    axis_y = 34 + len(rows) * block
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="black"/>')
    decade = lo
    while decade <= hi * 1.0001:
        x = left + width_of(decade)
        body.append(f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle" {_FONT}>{decade:g}</text>')
        decade *= 10
    body.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{axis_y + 30}" text-anchor="middle" {_FONT}>'
        "latency, ms (log scale)</text>"
    )
    for j, (key, colour) in enumerate(series):
        x = left + j * 70
        body.append(f'<rect x="{x}" y="{axis_y + 38}" width="10" height="10" fill="{colour}"/>')
        body.append(f'<text x="{x + 14}" y="{axis_y + 47}" {_FONT}>{key}</text>')
    return _svg(width, height, body, title)
