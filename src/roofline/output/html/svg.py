"""Inline SVG charts built as text from numbers: the roofline (one point per GEMM and op), lines
over batches (the sweep's throughput at the roofline and predicted, its memory-bound share,
transitions marked) and bars of step time (compare). No matplotlib: this works where only the
core install is.

Chart units as in ``roofline.plot``: arithmetic intensity in FLOP/B, throughput in TFLOP/s
(a memory slope of B GB/s is y = x B / 1000). Every text is escaped here; callers pass plain
strings. Memory-bound points are circles, compute-bound ones squares, ops hollow: the shape
tells the bound without colour (``page.css`` colours them too). On a line chart the shape tells
the curve: squares the roofline's, hollow circles a prediction's, named in a key under it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from ...units import log_ticks, nice_above, nice_below, si
from ..fit_bands import Band

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 72, 24, 18, 52  # room for tick labels and axis titles
POINT_R = 4.5  # a circle's radius; a square of equal area has side r * sqrt(pi)
CHAR_PX = 7  # a 12 px sans-serif character, generously (Chromium's system-ui: 6.4-6.6 px)
#: wider glyphs at 12 px, generously: measured in Debian's chromium (its default sans) per
#: character over ten of each, M 10.3, W 11.9, m 11.7, the arrow and + 10.05 px; the digits
#: 7.6 and capitals 7.4-8.2 (a label of "MM129 → compute" ran 9 px past a 7 px a character
#: estimate, across a transition's line)
WIDE_PX, UPPER_PX = 12, 8.5
_WIDE = frozenset("MWmw\u2192+=%@")


def text_px(text: str) -> float:
    """About how wide ``text`` is drawn, in viewBox pixels: enough to keep a label inside the
    chart and off the lines beside it (no browser measures it here)."""
    return sum(WIDE_PX if c in _WIDE else UPPER_PX if c.isupper() or c.isdigit() else CHAR_PX
               for c in text)


def beside(at: float, text: str, right: float, gap: float = 4) -> str:
    """A label beside a vertical line at ``at``: to its right (``x``), or where that would
    pass ``right``, to its left, anchored at its end."""
    if at + gap + text_px(text) <= right:
        return f'x="{_f(at + gap)}"'
    return f'x="{_f(at - gap)}" text-anchor="end"'

Range = tuple[float, float]


@dataclass(frozen=True)
class Point:
    """One GEMM or op on the roofline: where, its bound, whether it is an op (drawn hollow),
    the id of its table row and the tooltip text."""

    x: float
    y: float
    bound: str
    op: bool
    row: str
    tip: str


@dataclass(frozen=True)
class Axis:
    """Values in ``[low, high]`` onto pixels ``[start, start + length]``, log or linear;
    ``flip`` for y (pixels grow downwards)."""

    low: float
    high: float
    start: float
    length: float
    log: bool = True
    flip: bool = False
    #: the values ticked, where not ``ticks``' own (a plan's GPU counts, its step times'
    #: ``units.log_ticks``)
    values: tuple[float, ...] = ()

    def at(self, value: float) -> float:
        if self.log:
            share = math.log10(value / self.low) / math.log10(self.high / self.low)
        else:
            share = (value - self.low) / (self.high - self.low)
        return self.start + (self.length * (1 - share) if self.flip else self.length * share)

    def ticks(self) -> list[float]:
        """``values`` where given; else decades on a log axis (with 2 and 5 when it spans
        under two decades), on a linear one five equal steps."""
        if self.values:
            return list(self.values)
        if not self.log:
            step = (self.high - self.low) / 5
            return [self.low + i * step for i in range(6)]
        first, last = math.floor(math.log10(self.low)), math.ceil(math.log10(self.high))
        steps = (1, 2, 5) if last - first <= 2 else (1,)
        values = [s * 10.0 ** e for e in range(first, last + 1) for s in steps]
        return [v for v in values if self.low * (1 - 1e-9) <= v <= self.high * (1 + 1e-9)]


def _x_axis(low: float, high: float, log: bool = True, values: Sequence[float] = ()) -> Axis:
    return Axis(low, high, LEFT, WIDTH - LEFT - RIGHT, log, values=tuple(values))


def _y_axis(low: float, high: float, log: bool = True, values: Sequence[float] = ()) -> Axis:
    return Axis(low, high, TOP, HEIGHT - TOP - BOTTOM, log, flip=True, values=tuple(values))


def tick_text(value: float, percent: bool = False) -> str:
    """``0.01``, ``1``, ``20,000``, from 100,000 with a decimal prefix (``100k``, ``10M``: a
    y tick label as wide as ``1,000,000`` runs into the axis title); ``40%`` on a share axis."""
    if percent:
        return f"{value:.0%}"
    if value >= 1e5:
        return si(value, "").replace(" ", "")
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _f(value: float) -> str:
    return f"{value:.1f}"


def _open(label: str, height: int = HEIGHT) -> str:
    return (f'<svg viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(label)}" '
            f'xmlns="http://www.w3.org/2000/svg">')


def _frame(x: Axis, y: Axis, x_title: str, y_title: str, percent: bool = False,
           x_text: Callable[[float], str] = tick_text,
           y_text: Callable[[float], str] | None = None) -> list[str]:
    """Grid, ticks and their labels (``x_text``, ``y_text`` of each value: ``tick_text``'s
    unless given; an empty one a grid line alone), the axes' box and titles."""
    out = []
    x0, x1 = x.start, x.start + x.length
    y0, y1 = y.start, y.start + y.length
    for value in x.ticks():
        px = _f(x.at(value))
        out.append(f'<line class="grid" x1="{px}" y1="{_f(y0)}" x2="{px}" y2="{_f(y1)}"/>')
        if shown := x_text(value):
            out.append(f'<text x="{px}" y="{_f(y1 + 16)}" text-anchor="middle">'
                       f"{escape(shown)}</text>")
    for value in y.ticks():
        py = _f(y.at(value))
        shown = y_text(value) if y_text is not None else tick_text(value, percent)
        out.append(f'<line class="grid" x1="{_f(x0)}" y1="{py}" x2="{_f(x1)}" y2="{py}"/>'
                   f'<text x="{_f(x0 - 6)}" y="{py}" text-anchor="end" dominant-baseline='
                   f'"middle">{escape(shown)}</text>')
    out.append(f'<rect class="ax" x="{_f(x0)}" y="{_f(y0)}" width="{_f(x.length)}" '
               f'height="{_f(y.length)}"/>')
    out.append(f'<text x="{_f((x0 + x1) / 2)}" y="{HEIGHT - 8}" text-anchor="middle">'
               f'{escape(x_title)}</text>')
    out.append(f'<text transform="translate(14 {_f((y0 + y1) / 2)}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_title)}</text>')
    return out


def marker(x: float, y: float, bound: str, extra: str = "", inner: str = "") -> str:
    """A circle (memory-bound) or a square of the same area (compute-bound) at pixel x, y."""
    return shape("circle" if bound == "memory" else "square", x, y, POINT_R, extra, inner)


def roofline_ranges(xy: Sequence[tuple[float, float]],
                    roofs: Sequence[tuple[float, float]]) -> tuple[Range, Range]:
    """x (FLOP/B) and y (TFLOP/s) ranges at 1-2-5 steps holding every point, ridge and ceiling
    (``roofs``: (peak TFLOP/s, bandwidth GB/s)), with room around the points (as
    ``roofline.plot.data.chart_limits``)."""
    ridges = [peak * 1e3 / gbs for peak, gbs in roofs]
    xs = [x for x, _ in xy] + ridges
    x_range = (nice_below(min(xs) / 2), nice_above(max(xs) * 2))
    lows = [y / 2.5 for _, y in xy] + [x_range[0] * gbs / 1e3 / 1.2 for _, gbs in roofs]
    lows += [peak / 1.2 for peak, _ in roofs]
    # a point above the roof's peak (a GEMM on another dtype's, TF32 under an fp32 step's roof:
    # ``roofline_chart``'s ``others``) stays in the frame
    highs = [p for p, _ in roofs] + [y for _, y in xy]
    return x_range, (nice_below(min(lows)), nice_above(max(highs) * 1.5))


def roofline_chart(points: Sequence[Point], peak_tflops: float, bandwidth_gbs: float,
                   x_range: Range, y_range: Range, label: str, unit: str = "TFLOP/s",
                   others: Sequence[tuple[str, float]] = ()) -> str:
    """The roof (memory slope, ridge, compute ceiling) and one marker per point, each a
    ``.pt`` element carrying its row id (``data-r``) and its tooltip as ``<title>``; ``unit``
    the peak's and the rate axis's (TOPS for an int8 step: ``units.rate_unit``); ``others``:
    (dtype, peak) of the dtypes some of its GEMMs run in instead (TF32 in an fp32 step), each a
    dashed roof of its own (``_other_roof``), as the PNG chart draws other dtypes' ceilings."""
    x, y = _x_axis(*x_range), _y_axis(*y_range)
    out = [_open(label), *_frame(x, y, "arithmetic intensity (FLOP/B)", f"attainable {unit}")]
    out += _roof(x, y, peak_tflops, bandwidth_gbs, unit)
    for dtype, peak in others:
        out += _other_roof(x, y, peak, bandwidth_gbs, f"{dtype} {peak:,.4g}")
    for p in points:
        kind = f'pt {"m" if p.bound == "memory" else "c"}{" op" if p.op else ""}'
        out.append(marker(x.at(p.x), y.at(p.y), p.bound,
                          f'class="{kind}" data-r="{escape(p.row)}" ',
                          f"<title>{escape(p.tip)}</title>"))
    return "".join(out) + "</svg>"


def _roof(x: Axis, y: Axis, peak: float, gbs: float, unit: str) -> list[str]:
    """The roof as one polyline clipped to the chart, the ridge as a dashed line, and their
    labels."""
    ridge = peak * 1e3 / gbs
    start = max(x.low, y.low * 1e3 / gbs)  # where the slope enters the chart
    corners = [(start, start * gbs / 1e3)] if start < ridge else []
    if ridge <= x.high:
        corners += [(max(ridge, x.low), peak), (x.high, peak)]
    else:
        corners.append((x.high, x.high * gbs / 1e3))
    line = " ".join(f"{_f(x.at(a))},{_f(y.at(b))}" for a, b in corners)
    out = [f'<polyline class="roof" points="{line}"/>']
    top, right = y.at(peak), x.start + x.length
    out.append(_peak_label(f"peak {peak:,.4g} {unit}", top, right, y.start,
                           x.at(ridge) if x.low < ridge < x.high else None))
    if x.low < ridge < x.high:
        at, label = x.at(ridge), f"ridge {ridge:,.1f} FLOP/B"
        out.append(f'<line class="ridge" x1="{_f(at)}" y1="{_f(top)}" x2="{_f(at)}" '
                   f'y2="{_f(y.start + y.length)}"/>'
                   f'<text {beside(at, label, right - 2)} y="{_f(y.start + y.length - 6)}">'
                   f"{label}</text>")
    if start < ridge:  # the slope's label, along it, near its lower end
        (a, b), (c, d) = corners[0], corners[1]
        angle = math.degrees(math.atan2(y.at(d) - y.at(b), x.at(c) - x.at(a)))
        px, py = x.at(a) + 0.25 * (x.at(c) - x.at(a)), y.at(b) + 0.25 * (y.at(d) - y.at(b))
        out.append(f'<text transform="translate({_f(px)} {_f(py - 9)}) rotate({angle:.1f})">'
                   f'{gbs:,.4g} GB/s</text>')
    return out


def _other_roof(x: Axis, y: Axis, peak: float, gbs: float, label: str) -> list[str]:
    """Another dtype's roof, dashed: the memory slope on to its ridge, then its ceiling,
    labelled at the right end above it."""
    ridge = peak * 1e3 / gbs
    start = max(x.low, y.low * 1e3 / gbs)
    corners = ([(start, start * gbs / 1e3)] if start < ridge else []) + (
        [(max(ridge, x.low), peak), (x.high, peak)] if ridge <= x.high
        else [(x.high, x.high * gbs / 1e3)])
    line = " ".join(f"{_f(x.at(a))},{_f(y.at(b))}" for a, b in corners)
    right = x.start + x.length
    return [f'<polyline class="ridge" fill="none" points="{line}"/>',
            f'<text x="{_f(right - 4)}" y="{_f(y.at(peak) - 5)}" text-anchor="end">'
            f"{escape(label)}</text>"]


def _peak_label(label: str, top: float, right: float, ceiling: float,
                ridge_at: float | None) -> str:
    """The compute ceiling's label at its right end: below the ceiling (the points sit on
    the roof itself), or, where the ridge's dashed line would cross it there, above the
    ceiling when the chart has room."""
    x0 = right - 4 - text_px(label)
    crossed = ridge_at is not None and x0 - 2 <= ridge_at <= right
    y = top - 7 if crossed and top - ceiling >= 14 else top + 18
    return f'<text x="{_f(right - 4)}" y="{_f(y)}" text-anchor="end">{escape(label)}</text>'


@dataclass(frozen=True)
class Mark:
    """A vertical dashed line at ``x`` on a line chart, labelled (a sweep's transition)."""

    x: float
    label: str


@dataclass(frozen=True)
class Curve:
    """One line of a line chart: its ``(x, y, tooltip)`` points; ``predicted``, a predicted
    figure's (``page.css``: another colour, hollow circles; else solid squares); ``name``, its
    entry in the key under the chart (none: no key, the chart's one curve)."""

    points: Sequence[tuple[float, float, str]]
    predicted: bool = False
    name: str = ""


KEY_ROW = 24  # a row of the key under a line chart's axis title
MARK_ROW = 14  # a transition label's row under the chart's top edge
CLUSTER_PX = 24  # transitions nearer than this share a side for their labels


def line_chart(curves: Sequence[Curve], x_range: Range, y_range: Range,
               titles: tuple[str, str], label: str, y_log: bool = True,
               percent: bool = False, marks: Sequence[Mark] = (),
               bands: Sequence[Band] = ()) -> str:
    """Each curve through its points (log x), a marker at each, ``marks`` (each label on a row
    of its own where it would overlap another, off the other marks' lines where a side allows),
    ``bands`` shaded behind them (a sweep's steps that do not fit in memory), and under the
    axis title a key naming the curves that have a name and the bands, in as many rows as it
    takes."""
    x, y = _x_axis(*x_range), _y_axis(*y_range, log=y_log)
    key, rows = _key([c for c in curves if c.name], bands)
    out = [_open(label, HEIGHT + KEY_ROW * rows), *_frame(x, y, *titles, percent=percent)]
    for band in bands:
        low, high = (x.at(min(max(v, x.low), x.high)) for v in (band.low, band.high))
        out.append(f'<rect class="nofit{" darker" if band.darker else ""}" x="{_f(low)}" '
                   f'y="{_f(y.start)}" width="{_f(high - low)}" height="{_f(y.length)}">'
                   f"<title>{escape(band.label)}</title></rect>")
    out += _marks(marks, x, y)
    for curve in curves:
        kind = " pred" if curve.predicted else ""
        line = " ".join(f"{_f(x.at(a))},{_f(y.at(b))}" for a, b, _ in curve.points)
        out.append(f'<polyline class="curve{kind}" points="{line}"/>')
        for a, b, tip in curve.points:
            out.append(_curve_marker(x.at(a), y.at(b), curve.predicted,
                                     f"<title>{escape(tip)}</title>"))
    return "".join(out + key) + "</svg>"


def _marks(marks: Sequence[Mark], x: Axis, y: Axis) -> list[str]:
    """Each mark's dashed line and label. Marks nearer than ``CLUSTER_PX`` are a cluster whose
    labels go to its right (or, past the chart's edge, its left), so that none crosses a line
    of its own cluster; a side that crosses another mark's line is left for the other where
    that one is free; each label takes the first row where it overlaps no other (five marks
    within 12 px, Mistral-7B's decode on an L4, drew the fifth label over the first)."""
    right = x.start + x.length - 2
    ats = sorted((x.at(m.x), m) for m in marks)
    clusters: list[list[tuple[float, Mark]]] = []
    for at, mark in ats:
        if clusters and at - clusters[-1][-1][0] <= CLUSTER_PX:
            clusters[-1].append((at, mark))
        else:
            clusters.append([(at, mark)])
    lines = [at for at, _ in ats]
    placed: list[tuple[float, float, int]] = []  # a label's extent and row
    out = [f'<line class="mark" x1="{_f(at)}" y1="{_f(y.start)}" x2="{_f(at)}" '
           f'y2="{_f(y.start + y.length)}"/>' for at in lines]
    for cluster in clusters:
        low, high = cluster[0][0], cluster[-1][0]
        for _, mark in cluster:
            width = text_px(mark.label)
            sides = [(high + 3, high + 3 + width, f'x="{_f(high + 3)}"'),
                     (low - 3 - width, low - 3, f'x="{_f(low - 3)}" text-anchor="end"')]
            inside = [s for s in sides if s[0] >= x.start + 2 and s[1] <= right] or sides[1:]
            clear = [s for s in inside if not any(s[0] < at < s[1] for at in lines)]
            if not clear and len(cluster) == 1:
                # no side of its line clears the others' (a lone mark at the chart's right
                # edge, its left side across a cluster's lines): written up along its line
                out.append(_along(cluster[0][0], y, mark.label))
                continue
            start, end, attr = (clear or inside)[0]
            row = 0
            while any(r == row and a < end and start < b for a, b, r in placed):
                row += 1
            placed.append((start, end, row))
            out.append(f'<text {attr} y="{_f(y.start + MARK_ROW * (row + 1))}" '
                       f'class="mark-label">{escape(mark.label)}</text>')
    return out


def _along(at: float, y: Axis, label: str) -> str:
    """A mark's label written up along the left of its line from the chart's top (its glyphs
    within 14 px of the line), where neither side holds it clear of other lines."""
    ax, ay = at - 4, y.start + 4
    return (f'<text x="{_f(ax)}" y="{_f(ay)}" text-anchor="end" '
            f'transform="rotate(-90 {_f(ax)} {_f(ay)})" class="mark-label">{escape(label)}'
            f'</text>')


def _key(curves: Sequence[Curve], bands: Sequence[Band]) -> tuple[list[str], int]:
    """The key under a line chart: a swatch of each named curve's line and marker, or of each
    band's shade, then its name (``_key_rows``)."""
    items: list[tuple[str, str]] = []
    for curve in curves:
        kind = " pred" if curve.predicted else ""
        swatch = (f'<line class="curve{kind}" x1="0" y1="0" x2="24" y2="0"/>'
                  + _curve_marker(12, 0, curve.predicted, "", point=False))
        items.append((swatch, curve.name))
    for band in bands:
        swatch = (f'<rect class="nofit{" darker" if band.darker else ""}" x="0" y="-6" '
                  f'width="24" height="12"/>')
        items.append((swatch, band.label))
    return _key_rows(items)


def _key_rows(items: Sequence[tuple[str, str]]) -> tuple[list[str], int]:
    """A key under a chart: each item's swatch (drawn at 0, 0, 24 wide) then its name, a new
    row where the next would pass the chart's width. The parts and the number of rows."""
    out, left, row = [], float(LEFT), 0
    for swatch, name in items:
        width = 30 + text_px(name)
        if left > LEFT and left + width > WIDTH - RIGHT:
            left, row = float(LEFT), row + 1
        middle = HEIGHT + KEY_ROW * row + KEY_ROW / 2
        out.append(f'<g transform="translate({_f(left)} {_f(middle)})">{swatch}'
                   f'<text x="30" y="0" dominant-baseline="middle">{escape(name)}</text></g>')
        left += width + 24
    return out, row + 1 if items else 0


def _curve_marker(x: float, y: float, predicted: bool, inner: str, point: bool = True) -> str:
    """A line chart's marker: a solid square, or a predicted figure's hollow circle;
    ``point``, one the page's script gives a tooltip (``.pt``), not the key's."""
    kind = "p" if predicted else "c"
    extra = f'class="{"pt " if point else ""}{kind}" '
    return marker(x, y, "memory" if predicted else "compute", extra, inner)


@dataclass(frozen=True)
class Bar:
    """One device's step: its memory- and compute-bound seconds and the text at the bar's end."""

    label: str
    memory_s: float
    compute_s: float
    text: str


HATCH = ('<defs><pattern id="rl-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
         'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fdecea"/>'
         '<line x1="0" y1="0" x2="0" y2="6" stroke="#c62828" stroke-width="2.5"/></pattern>'
         '</defs>')


BAR_MIN = 240  # the longest bar's length at least, however long the labels


def bar_chart(bars: Sequence[Bar], label: str) -> str:
    """Horizontal bars of step time on a linear axis from 0, the memory-bound part hatched
    (pattern, not only colour) and the compute-bound part solid; room made on the left for the
    longest device name and on the right for the longest text at a bar's end (the chart grows
    wider where ``WIDTH`` would leave the bars under ``BAR_MIN``)."""
    row = 34
    left = max(150, 8 + max(text_px(b.label) for b in bars) + 8)
    after = 6 + max(text_px(b.text) for b in bars) + 4
    width = max(WIDTH, math.ceil(left + BAR_MIN + after))
    height = TOP + row * len(bars) + 40
    longest = max(b.memory_s + b.compute_s for b in bars)
    scale = (width - left - after) / longest
    out = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" '
           f'xmlns="http://www.w3.org/2000/svg">', HATCH]
    for index, bar in enumerate(bars):
        top = TOP + index * row
        memory, compute = bar.memory_s * scale, bar.compute_s * scale
        out.append(f'<text x="{left - 8}" y="{top + 13}" text-anchor="end" '
                   f'dominant-baseline="middle">{escape(bar.label)}</text>')
        out.append(f'<rect class="bar-m" x="{left}" y="{top}" width="{memory:.1f}" '
                   f'height="26"/><rect class="bar-c" x="{left + memory:.1f}" y="{top}" '
                   f'width="{compute:.1f}" height="26"/>')
        out.append(f'<text x="{left + memory + compute + 6:.1f}" y="{top + 13}" '
                   f'dominant-baseline="middle">{escape(bar.text)}</text>')
    key = TOP + row * len(bars) + 10
    out.append(f'<rect class="bar-m" x="{left}" y="{key}" width="18" height="12"/>'
               f'<text x="{left + 24}" y="{key + 10}">memory-bound time</text>'
               f'<rect class="bar-c" x="{left + 170}" y="{key}" width="18" height="12"/>'
               f'<text x="{left + 194}" y="{key + 10}">compute-bound time</text>')
    return "".join(out) + "</svg>"


# ---------------------------------------------------------------------------------- plan chart

#: A layout's shape by what bounds it: memory circles and compute squares as on the roofline,
#: communication diamonds, pipeline-bubble triangles; its class colours it (``page.css``).
BOUND_SHAPES = {"memory": ("circle", "m"), "compute": ("square", "c"),
                "communication": ("diamond", "x"), "pipeline bubble": ("triangle", "b")}
LAYOUT_R = 3.5  # a layout's marker: smaller than a GEMM's, many share a GPU count
FRONT_R = 4.5
#: A front label's slope, as ``plot.plan``'s annotations (20 degrees up to the right).
LABEL_DEGREES = 20.0
LABEL_GAP = 8  # from its point to a front label's start, along both axes (the PNG's 6 points)


def shape(kind: str, x: float, y: float, r: float, extra: str = "", inner: str = "") -> str:
    """A circle, square, diamond or triangle of about the area of a circle of radius ``r``,
    centred at pixel x, y."""
    if kind == "circle":
        return f'<circle {extra}cx="{_f(x)}" cy="{_f(y)}" r="{r}">{inner}</circle>'
    if kind == "square":
        side = r * math.sqrt(math.pi)
        return (f'<rect {extra}x="{_f(x - side / 2)}" y="{_f(y - side / 2)}" '
                f'width="{side:.1f}" height="{side:.1f}">{inner}</rect>')
    if kind == "diamond":
        half = r * math.sqrt(math.pi / 2)  # a square of the circle's area, turned
        corners = [(x, y - half), (x + half, y), (x, y + half), (x - half, y)]
    else:  # an equilateral triangle, point up, centred on its centroid
        side = r * math.sqrt(4 * math.pi / math.sqrt(3))
        height = side * math.sqrt(3) / 2
        corners = [(x, y - 2 * height / 3), (x + side / 2, y + height / 3),
                   (x - side / 2, y + height / 3)]
    points = " ".join(f"{_f(a)},{_f(b)}" for a, b in corners)
    return f'<polygon {extra}points="{points}">{inner}</polygon>'


@dataclass(frozen=True)
class FrontPoint:
    """A layout on a plan's Pareto front: GPUs, its predicted and roofline step seconds, its
    label, the id of its table row and its tooltip."""

    x: float
    y: float
    roof: float
    label: str
    row: str
    tip: str


def count_labels(values: Sequence[float], x: Axis) -> dict[float, str]:
    """The GPU counts an x axis writes: each that clears the last one written by its width,
    and the largest always, in place of those it would overlap (a comma list 8,9,10,12 wrote
    them over each other)."""
    ordered = sorted(values)
    shown: list[float] = []

    def written(value: float) -> str:  # a count as the text writes it: 1024, not 1,024
        return f"{value:.0f}"

    def clears(value: float, before: float) -> bool:
        gap = (text_px(written(value)) + text_px(written(before))) / 2 + 8
        return x.at(value) - x.at(before) >= gap

    for value in ordered:
        if not shown or clears(value, shown[-1]):
            shown.append(value)
        elif value == ordered[-1]:
            while shown and not clears(value, shown[-1]):
                shown.pop()
            shown.append(value)
    return {value: written(value) for value in shown}


def _front_labels(front: Sequence[FrontPoint], x: Axis,
                  y: Axis) -> tuple[list[str], set[str]]:
    """Each front point's label on a slope of ``LABEL_DEGREES``: up and to its right, as the
    PNG's, or where that passes the chart's edge or another label, down and to its left. Both
    sides lie along the same slope, so two labels overlap only where their spans along it and
    across it both do (checked exactly in the turned frame). The parts, and where a label fits
    on neither side, the edges (``top``, ``bottom``) whose room would take it."""
    angle = math.radians(LABEL_DEGREES)
    cos, sin = math.cos(angle), math.sin(angle)
    left, right, top, bottom = x.start + 2, x.start + x.length - 2, 2.0, y.start + y.length
    placed: list[tuple[float, float, float, float]] = []  # along, across: spans
    out, grow = [], set()
    for point in front:
        px, py = x.at(point.x), y.at(point.y)
        width = text_px(point.label)
        options = []
        for sign in (1, -1):  # up-right from its start, else down-left to its end
            ax, ay = px + sign * LABEL_GAP, py - sign * LABEL_GAP
            ex, ey = ax + sign * width * cos, ay - sign * width * sin
            xs = (ax, ex, ax - 12 * sin, ex - 12 * sin)  # the baseline's ends, the tops'
            ys = (ay, ey, ay - 12 * cos, ey - 12 * cos)
            sides = {side for side, out_of in (("top", min(ys) < top),
                                               ("bottom", max(ys) > bottom),
                                               ("left", min(xs) < left),
                                               ("right", max(xs) > right)) if out_of}
            along, across = ax * cos - ay * sin, ax * sin + ay * cos
            span = (min(along, along + sign * width), max(along, along + sign * width),
                    across - 10, across + 3)
            clear = not any(s[0] < span[1] and span[0] < s[1] and s[2] < span[3]
                            and span[2] < s[3] for s in placed)
            options.append((bool(sides) or not clear, bool(sides), sign, ax, ay, span, sides))
        best = min(options, key=lambda o: o[:2])
        _, outside, sign, ax, ay, span, _ = best
        if outside:  # neither side inside: the room one side needs, if only top or bottom
            grow |= next((o[6] for o in options if o[6] <= {"top", "bottom"}), set())
        placed.append(span)
        anchor = "" if sign > 0 else ' text-anchor="end"'
        out.append(f'<text class="front-label"{anchor} transform="translate({_f(ax)} '
                   f'{_f(ay)}) rotate({-LABEL_DEGREES:g})">{escape(point.label)}</text>')
    return out, grow


#: How much a plan chart's step-time range grows, a side at a time, to make room for a front
#: label, and how often at most.
GROW, GROW_TRIES = 1.25, 8


def plan_chart(points: Sequence[Point], front: Sequence[FrontPoint], counts: Sequence[float],
               x_range: Range, y_range: Range, titles: tuple[str, str], label: str,
               key: Sequence[tuple[str, str]], y_text: Callable[[float], str]) -> str:
    """A plan's step time against GPUs, both axes log: each layout in ``points`` a marker
    whose shape and colour say what bounds it (``BOUND_SHAPES``), the front joined by a line
    with each point labelled, its roofline times dotted under it, and the ideal (time x GPUs
    constant from the front's first point) dashed; the x axis ticked at ``counts``, the y at
    ``units.log_ticks``, written by ``y_text``. ``key``: (what, name) under the chart, what a
    bound or ``front``, ``front-roof``, ``ideal``."""
    x = _x_axis(*x_range, values=counts)
    low, high = y_range
    for _ in range(GROW_TRIES):  # room for the front's labels above or below, where needed
        y = _y_axis(low, high, values=log_ticks(low, high, least=5))
        labels, grow = _front_labels(front, x, y)
        if not grow:
            break
        low, high = low / (GROW if "bottom" in grow else 1), high * (GROW if "top" in grow
                                                                    else 1)
    written = count_labels(counts, x)
    items = []
    for what, name in key:
        if what in BOUND_SHAPES:
            kind, css = BOUND_SHAPES[what]
            swatch = shape(kind, 12, 0, LAYOUT_R, f'class="lay {css}" ')
        else:
            swatch = f'<line class="{what}" x1="0" y1="0" x2="24" y2="0"/>' + (
                shape("circle", 12, 0, FRONT_R - 1, 'class="front-pt" ') if what == "front"
                else "")
        items.append((swatch, name))
    parts, rows = _key_rows(items)
    out = [_open(label, HEIGHT + KEY_ROW * rows),
           *_frame(x, y, *titles, x_text=lambda v: written.get(v, ""), y_text=y_text)]
    for p in points:
        kind, css = BOUND_SHAPES[p.bound]
        row = f'data-r="{escape(p.row)}" ' if p.row else ""
        out.append(shape(kind, x.at(p.x), y.at(p.y), LAYOUT_R, f'class="pt lay {css}" {row}',
                         f"<title>{escape(p.tip)}</title>"))
    if front:
        first = front[0]

        def line(css: str, xy: Sequence[tuple[float, float]]) -> str:
            drawn = " ".join(f"{_f(x.at(a))},{_f(y.at(b))}" for a, b in xy)
            return f'<polyline class="{css}" points="{drawn}"/>'

        out.append(line("ideal", [(p.x, first.y * first.x / p.x) for p in front]))
        out.append(line("front-roof", [(p.x, p.roof) for p in front]))
        out.append(line("front", [(p.x, p.y) for p in front]))
        out += [shape("circle", x.at(p.x), y.at(p.y), FRONT_R,
                      f'class="pt front-pt" data-r="{escape(p.row)}" ',
                      f"<title>{escape(p.tip)}</title>") for p in front]
        out += labels
    return "".join(out + parts) + "</svg>"
