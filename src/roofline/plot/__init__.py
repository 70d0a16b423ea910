"""Roofline charts: Reports drawn on a matplotlib Axes, and written to PNG, SVG or PDF.

Every function takes result objects and an optional ``ax`` and returns the Axes. matplotlib is
imported inside the functions, so ``import roofline`` stays light, and nothing here touches
pyplot: a chart drawn without an ``ax`` gets a ``matplotlib.figure.Figure`` of its own (a
``RooflineFigure``, which Jupyter shows inline as PNG), so it renders headless with Agg and is
freed like any other object.

Units: arithmetic intensity in FLOP/byte on x, throughput in TFLOP/s (10^12 FLOP/s) on y, both
log scale; a memory slope of B GB/s is the line y = x * B / 1000. Every drawn element carries a
``gid`` (``"roof-compute:a100-sxm4-80gb:fp16"``, ``"points-memory:v100-sxm2-16gb"``...) so
tests and users can find it again.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import PlotError
from ..output.report import compact_names
from ..roof import ridge_point

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..analysis.report import Report
    from ..analysis.whatif import Comparison

PLOT_FORMATS = ("png", "svg", "pdf")
BOUND_COLORS = {"memory": "#d62728", "compute": "#1f77b4"}
HARDWARE_COLORS = ("#222222", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P")
LABEL_SIZE = 10  # readable on a slide; ridge and ceiling labels one point smaller
_SAVE_METADATA = {"png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}


@dataclass(frozen=True)
class Roof:
    """One roofline in chart units: a compute ceiling over a memory slope."""

    peak_tflops: float
    bandwidth_gbs: float

    @property
    def ridge(self) -> float:
        """Where the slope meets the ceiling, in FLOP/B (``roofline.roof.ridge_point``)."""
        return ridge_point(self.peak_tflops * 1e12, self.bandwidth_gbs * 1e9)

    def slope_at(self, intensity: float) -> float:
        """TFLOP/s the memory slope allows at ``intensity`` FLOP/B."""
        return intensity * self.bandwidth_gbs / 1e3


def main_roof(report: Report) -> Roof:
    """The roof the report was analyzed against (measured figures for a measured entry)."""
    return Roof(report.peak_flops_per_s / 1e12, report.bandwidth_bytes_per_s / 1e9)


def datasheet_roof(report: Report) -> Roof | None:
    """For a measured entry, the theoretical roof stored beside it (``theoretical:``); else None.

    A missing theoretical peak or bandwidth falls back to the measured one.
    """
    spec, theory = report.hardware, report.hardware.theoretical
    if spec.origin != "measured" or theory is None:
        return None
    peak = theory.peak_tflops.get(report.dtype)
    if peak is None and theory.bandwidth_gbs is None:
        return None
    measured = main_roof(report)
    return Roof(peak or measured.peak_tflops, theory.bandwidth_gbs or measured.bandwidth_gbs)


def other_ceilings(report: Report) -> list[tuple[str, float]]:
    """The entry's other dtypes' peaks (TFLOP/s), dtypes with equal peaks grouped:
    ``[("fp64, fp32", 19.5), ("tf32", 156.0), ("int8", 624.0)]`` for an fp16 A100 report."""
    spec = report.hardware
    main = spec.peak_tflops[report.dtype]
    groups: dict[float, list[str]] = {}
    for dtype in spec.dtypes:
        if spec.peak_tflops[dtype] != main:
            groups.setdefault(spec.peak_tflops[dtype], []).append(dtype)
    return [(", ".join(names), peak) for peak, names in groups.items()]


def _main_dtypes(report: Report) -> str:
    """The report's dtype, with the dtypes sharing its peak: ``"fp16 (= bf16)"``."""
    spec = report.hardware
    same = [d for d in spec.dtypes
            if d != report.dtype and spec.peak_tflops[d] == spec.peak_tflops[report.dtype]]
    return report.dtype + (f" (= {', '.join(same)})" if same else "")


@dataclass
class _Group:
    """Coincident rows drawn as one point: where, and the first copy's names it stands for."""

    x: float
    y: float
    names: list[str]
    copies: int

    @property
    def label(self) -> str:
        """``MM1,MM5``, and ``x32`` when the point stands for 32 copies of a repeated layer."""
        return compact_names(self.names) + (f" x{self.copies}" if self.copies > 1 else "")


def _groups(rows, name) -> list[_Group]:
    """Rows at one (intensity, throughput) point grouped, sorted by intensity."""
    found: dict[tuple[float, float], tuple[float, float, list]] = {}
    for row, item in rows:
        x, y = item.intensity, row.attainable_flops_per_s / 1e12
        key = (round(math.log10(x), 9), round(math.log10(y), 9))
        found.setdefault(key, (x, y, []))[2].append(item)
    groups = []
    for x, y, items in found.values():
        names = list(dict.fromkeys(name(i) for i in items if i.copy == 0)) or [name(items[0])]
        groups.append(_Group(x, y, names, len({item.copy for item in items})))
    return sorted(groups, key=lambda g: (g.x, g.y))


def _gemm_groups(report: Report) -> list[_Group]:
    return _groups([(r, r.gemm) for r in report.results], lambda g: g.name)


def _op_groups(report: Report) -> list[_Group]:
    return _groups([(r, r.op) for r in report.ops if r.op.flops], lambda o: o.kind)


def point_groups(report: Report) -> list[tuple[float, float, str]]:
    """``(intensity FLOP/B, attainable TFLOP/s, label)`` per distinct GEMM point, coincident
    GEMMs sharing one label (repeated layers counted: ``MM1 x32``), sorted by intensity."""
    return [(g.x, g.y, g.label) for g in _gemm_groups(report)]


def op_groups(report: Report) -> list[tuple[float, float, str]]:
    """The same for the non-GEMM ops, labelled by kind; ops without FLOPs (a gather) have no
    place on a log-scale intensity axis and are left out."""
    return [(g.x, g.y, g.label) for g in _op_groups(report)]


@functools.cache
def _figure_class() -> type:
    from matplotlib.figure import Figure

    class RooflineFigure(Figure):
        """A pyplot-free Figure that Jupyter displays inline (as PNG)."""

        def _repr_png_(self) -> bytes:
            import io

            buffer = io.BytesIO()
            self.savefig(buffer, format="png", bbox_inches="tight")
            return buffer.getvalue()

    return RooflineFigure


def new_axes(figsize: tuple[float, float] = (11.0, 7.5)) -> Axes:
    """An Axes on a new RooflineFigure, the full width, room below for the legend (in columns,
    so it never takes a third of the width); pyplot untouched."""
    figure = _figure_class()(figsize=figsize, dpi=100)
    return figure.add_axes((0.08, 0.3, 0.9, 0.62))


def _as_list(reports: Report | Sequence[Report]) -> list[Report]:
    items: list[Report] = ([reports] if not isinstance(reports, Sequence)  # one Report
                           else list(reports))
    if not items:
        raise PlotError("nothing to plot: no report given")
    return items


def _nice_below(value: float) -> float:
    """The largest of 1, 2, 5 x 10^k at or below ``value``."""
    decade = 10.0 ** math.floor(math.log10(value))
    return max(step * decade for step in (1, 2, 5) if step * decade <= value * (1 + 1e-12))


def _nice_above(value: float) -> float:
    """The smallest of 1, 2, 5 x 10^k at or above ``value``."""
    decade = 10.0 ** math.floor(math.log10(value))
    return min(step * decade for step in (1, 2, 5, 10) if step * decade >= value * (1 - 1e-12))


def chart_limits(reports: Sequence[Report], other_dtypes: bool) -> tuple[tuple, tuple]:
    """x (FLOP/B) and y (TFLOP/s) ranges, at 1-2-5 steps, holding every point, ridge and ceiling
    drawn, with room (a factor of 2 or more) around the points for their labels."""
    roofs = [main_roof(r) for r in reports] + [d for d in map(datasheet_roof, reports) if d]
    points = [(x, y) for r in reports for x, y, _ in point_groups(r) + op_groups(r)]
    points += [(x, y) for r in reports for kind in ("predicted", "measured")
               for x, y in time_points(r, kind)]
    points += [p for p in map(stream_point, reports) if p is not None]
    xs = [x for x, _ in points] + [roof.ridge for roof in roofs]
    x_range = (_nice_below(min(xs) / 2), _nice_above(max(xs) * 2))
    ceilings = [roof.peak_tflops for roof in roofs]
    if other_dtypes:
        ceilings += [peak for r in reports for _, peak in other_ceilings(r)]
    lows = [y / 2.5 for _, y in points] + [roof.slope_at(x_range[0]) / 1.2 for roof in roofs]
    lows += [peak / 1.2 for peak in ceilings]
    links = [r.hardware.host_link_gbs for r in reports if r.hardware.host_link_gbs]
    lows += [min(x_range[1] * gbs / 1e3, max(ceilings)) / 1.5 for gbs in links]  # its right end
    return x_range, (_nice_below(min(lows)), _nice_above(max(ceilings) * 1.5))


def plot_roofline(reports: Report | Sequence[Report], ax: Axes | None = None, *,
                  other_dtypes: bool | None = None, host_link: bool = True,
                  labels: bool = True) -> Axes:
    """Draw one Report, or several (one per hardware entry, to compare), on ``ax``.

    Each entry gets its roof (the memory slope up to the ridge, marked, then the compute
    ceiling of the report's dtype), lighter ceilings for its other dtypes (``other_dtypes``;
    by default only when one report is drawn), its host-link slope when the entry has one
    (dotted), and for a measured entry the theoretical roof (dash-dot) beside the measured one.
    Each GEMM is a point coloured by bound, labelled with its name; coincident GEMMs share
    one label (``MM1,MM5``), with several devices each column of points has one label
    (``_label_points``), and labels are placed so that none overlaps another or crosses a
    drawn line. Returns the Axes; without ``ax`` a new figure is made (see ``new_axes``).
    """
    items = _as_list(reports)
    ax = ax if ax is not None else new_axes()
    other_dtypes = len(items) == 1 if other_dtypes is None else other_dtypes
    xlim, ylim = chart_limits(items, other_dtypes)
    _setup_axes(ax, xlim, ylim, _title(items))
    placer = _Placer(ax)
    for report in items:
        _block_markers(placer, report, ylim[0])
        _block_lines(placer, report, xlim, other_dtypes, host_link)
    for index, report in enumerate(items):
        color = HARDWARE_COLORS[index % len(HARDWARE_COLORS)]
        _draw_roofs(ax, report, color, other_dtypes, host_link, placer)
    for index, report in enumerate(items):
        suffix = f" ({report.hardware.name})" if len(items) > 1 else ""
        _draw_points(ax, report, MARKERS[index % len(MARKERS)], suffix)
        _draw_time_points(ax, report)
    if labels:
        _label_points(ax, items, placer)
    _legend_below(ax)
    return ax


def _figure(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn on (a chart here never lives on a SubFigure)."""
    return cast("Figure", ax.figure)


def _legend_below(ax: Axes) -> None:
    """The legend in columns under the x-axis label, as wide as the Axes at most."""
    handles, names = ax.get_legend_handles_labels()
    first: dict[str, Any] = {}  # one entry per name: the devices' predicted-time points share one
    for handle, name in zip(handles, names):
        first.setdefault(name, handle)
    handles, names = list(first.values()), list(first)
    height_in = ax.get_position().height * _figure(ax).get_figheight()
    ax.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, -0.55 / height_in),
              ncol=2 if len(names) > 3 else len(names) or 1, fontsize=LABEL_SIZE - 1,
              frameon=False)


def _title(reports: Sequence[Report]) -> str:
    from ..output.report import precision_text, step_text

    names = list(dict.fromkeys(r.network.name for r in reports))
    hardware = " vs ".join(dict.fromkeys(r.hardware.name for r in reports))
    precision = " | ".join(dict.fromkeys(precision_text(r.network) for r in reports))
    steps = " | ".join(dict.fromkeys(step_text(r.network) for r in reports))
    return f"{' / '.join(names)} on {hardware}, {steps}\n{precision}"


def _setup_axes(ax: Axes, xlim: tuple, ylim: tuple, title: str) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    plain = FuncFormatter(lambda value, _pos: f"{value:g}")
    for axis, (low, high) in ((ax.xaxis, xlim), (ax.yaxis, ylim)):
        if high / low <= 1e3:  # a short range gets ticks at 1, 2, 5 x 10^k too
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable throughput (TFLOP/s)")
    ax.set_title(title, fontsize=LABEL_SIZE + 2)
    ax.xaxis.label.set_fontsize(LABEL_SIZE + 1)
    ax.yaxis.label.set_fontsize(LABEL_SIZE + 1)
    ax.tick_params(labelsize=LABEL_SIZE)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.08)


def _block_markers(placer: _Placer, report: Report, y0: float) -> None:
    """Keep every label off the report's points, its ridge marker and its ridge line."""
    for x, y, _ in point_groups(report) + op_groups(report):
        placer.block(x, y, 5.0)
    roof = main_roof(report)
    placer.block(roof.ridge, roof.peak_tflops, 5.0)
    placer.block_vertical(roof.ridge, y0, roof.peak_tflops)


def _block_lines(placer: _Placer, report: Report, xlim: tuple, other_dtypes: bool,
                 host_link: bool) -> None:
    """Keep every label off the report's roof (slope and ceiling), its other-dtype ceilings
    and its host-link slope: drawn lines never run through text."""
    x0, x1 = xlim
    roofs = [main_roof(report)] + [d for d in [datasheet_roof(report)] if d]
    for roof in roofs:
        placer.block_line((x0, roof.slope_at(x0)), (roof.ridge, roof.peak_tflops))
        placer.block_line((roof.ridge, roof.peak_tflops), (x1, roof.peak_tflops))
    main = roofs[0]
    if other_dtypes:
        for _, peak in other_ceilings(report):
            placer.block_line((max(x0, Roof(peak, main.bandwidth_gbs).ridge), peak), (x1, peak))
    gbs = report.hardware.host_link_gbs
    if host_link and gbs:
        end = min(x1, Roof(main.peak_tflops, gbs).ridge)
        placer.block_line((x0, x0 * gbs / 1e3), (end, end * gbs / 1e3))


def _draw_points(ax: Axes, report: Report, marker: str, suffix: str) -> None:
    hw = report.hardware.name
    for which in ("memory", "compute"):
        chosen = [r for r in report.results if r.bound == which]
        if not chosen:
            continue
        xs = [r.gemm.intensity for r in chosen]
        ys = [r.attainable_flops_per_s / 1e12 for r in chosen]
        ax.scatter(xs, ys, s=40, marker=marker, color=BOUND_COLORS[which], zorder=6,
                   edgecolors="white", linewidths=0.6, gid=f"points-{which}:{hw}",
                   label=f"{which}-bound GEMMs{suffix}")
    for which in ("memory", "compute"):
        ops = [r for r in report.ops if r.bound == which and r.op.flops]
        if ops:
            ax.scatter([r.op.intensity for r in ops],
                       [r.attainable_flops_per_s / 1e12 for r in ops], s=36, marker="x",
                       color=BOUND_COLORS[which], zorder=6, linewidths=1.4, gid=f"ops-{which}:{hw}",
                       label=f"{which}-bound other ops{suffix}")


def time_points(report: Report, kind: str) -> list[tuple[float, float]]:
    """``(intensity, TFLOP/s)`` at the ``predicted`` or ``measured`` time of each GEMM (first
    copies of repeated layers only); empty when the report has no such time."""
    points = []
    for r in report.results:
        seconds = r.predicted_time_s if kind == "predicted" else (
            r.measured.best_s if r.measured is not None else None)
        if seconds and not r.gemm.copy:
            points.append((r.gemm.intensity, r.gemm.flops / seconds / 1e12))
    return points


def _draw_time_points(ax: Axes, report: Report) -> None:
    """Predicted times as hollow grey circles, measured ones as black diamonds, each tied to
    its roof point by a thin dotted line: the roof points stay the bound they are. They look
    the same for every device, so the legend has one entry for each basis."""
    from ..analysis.predict import basis_of

    hw = report.hardware.name
    roof = {r.gemm.name: (r.gemm.intensity, r.attainable_flops_per_s / 1e12)
            for r in report.results if not r.gemm.copy}
    styles: tuple[tuple[str, dict[str, Any]], ...]
    styles = (("predicted", {"s": 46, "marker": "o", "facecolors": "none",
                                       "edgecolors": "0.35", "linewidths": 1.2}),
                        ("measured", {"s": 44, "marker": "D", "color": "black",
                                      "edgecolors": "white", "linewidths": 0.6}))
    for kind, style in styles:
        points = time_points(report, kind)
        if not points:
            continue
        name = (f"predicted time ({basis_of(report.hardware)})" if kind == "predicted"
                else "measured here (--measure)")
        ax.scatter(*zip(*points), zorder=7, gid=f"points-{kind}:{hw}", label=name,
                   **style)
        if kind == "measured":
            for (x, y), (x0, y0) in zip(points, roof.values()):
                ax.plot([x, x0], [y, y0], color="0.4", linewidth=0.7, linestyle=":", zorder=5,
                        gid=f"measured-to-roof:{hw}")


def _draw_roofs(ax: Axes, report: Report, color: str, other_dtypes: bool, host_link: bool,
                placer: _Placer) -> None:
    hw, roof = report.hardware.name, main_roof(report)
    measured = report.hardware.origin == "measured"
    kind = " measured" if measured else ""
    label = (f"{hw}{kind}: {_main_dtypes(report)} {roof.peak_tflops:g} TFLOP/s, "
             f"{roof.bandwidth_gbs:g} GB/s")
    style = dict(color=color, lw=2.0)
    if (roof.peak_tflops, roof.bandwidth_gbs) in placer.roofs:  # coincides with one drawn:
        style.update(ls=(0, (4, 3)), lw=2.4)                    # dashed, the first shows through
    placer.roofs.add((roof.peak_tflops, roof.bandwidth_gbs))
    _draw_roof(ax, roof, ("roof", hw, report.dtype), label, style)
    _mark_ridge(ax, roof, hw, color, placer)
    sheet = datasheet_roof(report)
    if sheet is not None:
        _draw_roof(ax, sheet, ("datasheet", hw, report.dtype), _theory_label(report, sheet),
                   dict(color=color, lw=1.2, ls="-.", alpha=0.6))
        placer.block_horizontal(sheet.peak_tflops, sheet.ridge, ax.get_xlim()[1])
    _ceiling_text(ax, roof.peak_tflops, f"{report.dtype} {roof.peak_tflops:g}", color, placer)
    if other_dtypes:
        _draw_other_ceilings(ax, report, roof, color, placer)
    if host_link and report.hardware.host_link_gbs:
        _draw_host_link(ax, report, roof, color)


def _theory_label(report: Report, sheet: Roof) -> str:
    """Legend text of a measured entry's theoretical roof; says when its bandwidth is unknown
    (the slope then falls back to the measured one)."""
    theory = report.hardware.theoretical
    known = theory is not None and theory.bandwidth_gbs is not None
    bandwidth = f"{sheet.bandwidth_gbs:g} GB/s" if known else "bandwidth not known"
    return f"{report.hardware.name} theoretical: {sheet.peak_tflops:g} TFLOP/s, {bandwidth}"


def _draw_roof(ax: Axes, roof: Roof, names: tuple[str, str, str], label: str,
               style: dict) -> None:
    """The memory slope from the left edge to the ridge, then the ceiling to the right edge.

    ``names`` = (kind, hardware, dtype) give the gids ``kind-memory:hw`` and
    ``kind-compute:hw:dtype``."""
    kind, hw, dtype = names
    x0, x1 = ax.get_xlim()
    ridge, peak = roof.ridge, roof.peak_tflops
    ax.plot([x0, ridge], [roof.slope_at(x0), peak], gid=f"{kind}-memory:{hw}",
            label="_nolegend_", **style)
    ax.plot([ridge, x1], [peak, peak], gid=f"{kind}-compute:{hw}:{dtype}", label=label, **style)


def _mark_ridge(ax: Axes, roof: Roof, hw: str, color: str, placer: _Placer) -> None:
    y0 = ax.get_ylim()[0]
    ax.plot([roof.ridge], [roof.peak_tflops], ls="none", marker="D", ms=5, mfc="white",
            mec=color, mew=1.2, zorder=5, gid=f"ridge:{hw}", label="_nolegend_")
    ax.plot([roof.ridge, roof.ridge], [y0, roof.peak_tflops], ls=":", lw=0.8, color=color,
            alpha=0.7, gid=f"ridge-line:{hw}", label="_nolegend_")
    text = f"ridge {roof.ridge:.3g} FLOP/B"
    if text in placer.texts:  # a coincident roof already labelled this ridge
        return
    placer.texts.add(text)
    # where slopes crowd the ridge line, the shorter "ridge 153" (the axis gives the unit)
    for words in (text, f"ridge {roof.ridge:.3g}", f"{roof.ridge:.3g}"):
        w, h = placer.text_size(words, LABEL_SIZE - 1)
        offset = placer.place(roof.ridge, y0, (h, w), _ridge_offsets(w, h, placer.frame_height),
                              must_fit=words != f"{roof.ridge:.3g}")
        if offset is not None:
            break
    ax.annotate(words, (roof.ridge, y0), xytext=placer.to_points(*offset),
                textcoords="offset points", rotation=90, ha="left", va="bottom",
                fontsize=LABEL_SIZE - 1, color=color, gid=f"ridge-label:{hw}")


def _ridge_offsets(w: float, h: float, height: float) -> list[tuple[float, float]]:
    """Left of the ridge line at the bottom, else right of it, else higher up in steps of
    4 pixels (fine enough to find the gap between two slopes that cross the ridge line)."""
    return [(-h - 2, 3 + lift) if side == 0 else (2, 3 + lift)
            for lift in range(0, max(4, int(height - w)), 4) for side in (0, 1)]


def _ceiling_text(ax: Axes, peak: float, text: str, color: str, placer: _Placer,
                  alpha: float = 1.0) -> None:
    """``text`` just above the right end of a ceiling (or just below if that is taken); a
    ceiling another device already labelled at the same height with the same text is not
    labelled twice (no "fp16 125fp16 125")."""
    if text in placer.texts:
        return
    placer.texts.add(text)
    x1 = ax.get_xlim()[1]
    w, h = placer.text_size(text, LABEL_SIZE - 1)
    offsets = [(-w - 4 - j * w / 4, dy) for j in range(24) for dy in (2, -h - 2)]
    dx, dy = placer.place(x1, peak, (w, h), offsets)
    ax.annotate(text, (x1, peak), xytext=placer.to_points(dx, dy), textcoords="offset points",
                ha="left", va="bottom", fontsize=LABEL_SIZE - 1, color=color, alpha=alpha,
                gid=f"ceiling-label:{text}")


def _draw_other_ceilings(ax: Axes, report: Report, roof: Roof, color: str,
                         placer: _Placer) -> None:
    """Lighter dashed ceilings of the entry's other dtypes, each from its own ridge."""
    x0, x1 = ax.get_xlim()
    hw = report.hardware.name
    drawn = 0
    for dtypes, peak in other_ceilings(report):
        start = max(x0, Roof(peak, roof.bandwidth_gbs).ridge)
        if start >= x1:  # its ridge lies right of the chart: no ceiling to draw here
            continue
        ax.plot([start, x1], [peak, peak], ls="--", lw=1.0, color=color, alpha=0.35,
                gid=f"dtype-ceiling:{hw}:{dtypes.replace(' ', '')}",
                label=f"{hw}: other dtypes" if not drawn else "_nolegend_")
        drawn += 1
        _ceiling_text(ax, peak, f"{dtypes} {peak:g}", color, placer, alpha=0.6)


def stream_point(report: Report) -> tuple[float, float] | None:
    """With ``--stream-input``: the step as one point, its FLOPs over the bytes it streams
    (FLOP/B) at the pace the slower of the transfer and the compute allows (TFLOP/s)."""
    stream = report.scaling.host_link if report.scaling else None
    if stream is None:
        return None
    flops = report.totals["flops"]
    return flops / stream.bytes, flops / max(stream.time_s, stream.compute_s) / 1e12


def _draw_host_link(ax: Axes, report: Report, roof: Roof, color: str) -> None:
    """The slope data streamed over the host link would follow, up to the compute ceiling."""
    link = report.hardware.host_link
    if link is None:
        return
    gbs, name = link.bandwidth_gbs, link.label
    x0, x1 = ax.get_xlim()
    end = min(x1, Roof(roof.peak_tflops, gbs).ridge)
    ax.plot([x0, end], [x0 * gbs / 1e3, end * gbs / 1e3], ls=":", lw=1.2, color=color,
            alpha=0.8, gid=f"host-link:{report.hardware.name}",
            label=f"{report.hardware.name}: host link ({name}) {gbs:g} GB/s")
    point = stream_point(report)
    stream = report.scaling.host_link if report.scaling else None
    if point is not None and stream is not None:
        x, y = point
        ax.plot([x], [y], ls="none", marker="*", ms=13, color=color, mec="black", zorder=7,
                gid=f"host-link-step:{report.hardware.name}",
                label=f"{report.hardware.name}: step, input streamed ({stream.bound}-bound)")


def _label_points(ax: Axes, reports: list[Report], placer: _Placer) -> None:
    """One label per point of one device. On a chart of several devices a GEMM sits at the
    same intensity on every device of one dtype, one above the other, so each column of points
    (those within a few pixels of one x, as many copies each) gets one label at its top point,
    naming every GEMM in it; the device markers tell the points apart. Six devices' labels are
    then as few as one device's."""
    groups = [g for report in reports for g in _gemm_groups(report) + _op_groups(report)]
    if len(reports) > 1:
        groups = _columns(ax, groups)
    gid = f"label:{reports[0].hardware.name}" if len(reports) == 1 else "label:all"
    for group in groups:
        text = group.label
        w, h = placer.text_size(text, LABEL_SIZE)
        dx, dy = placer.place(group.x, group.y, (w, h), _label_offsets(w, h))
        far = abs(dy) > h + 6 or abs(dx) > w + 6
        arrow = dict(arrowstyle="-", color="0.5", lw=0.6, shrinkA=0, shrinkB=4) if far else None
        ax.annotate(text, (group.x, group.y), xytext=placer.to_points(dx, dy),
                    textcoords="offset points", ha="left", va="bottom", fontsize=LABEL_SIZE,
                    color="0.15", zorder=7, arrowprops=arrow, gid=gid,
                    bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.75))


def _columns(ax: Axes, groups: list[_Group], within_px: float = 6.0) -> list[_Group]:
    """Groups of several devices merged into columns: those within ``within_px`` pixels of
    one x and standing for as many copies share one group, anchored at its top point."""
    columns: list[tuple[float, _Group]] = []
    for group in sorted(groups, key=lambda g: (g.x, g.y)):
        px = ax.transData.transform((group.x, group.y))[0]
        for start, column in columns:
            if px - start <= within_px and column.copies == group.copies:
                column.names += [n for n in group.names if n not in column.names]
                if group.y > column.y:
                    column.x, column.y = group.x, group.y
                break
        else:
            columns.append((px, _Group(group.x, group.y, list(group.names), group.copies)))
    return [column for _, column in columns]


def _label_offsets(w: float, h: float, gap: float = 6.0) -> list[tuple[float, float]]:
    """Candidate lower-left corners (pixels from the point): the four corners first, then
    further up or down in steps of a line, and further left or right."""
    offsets = []
    for j in range(28):
        lift = j * (h + 2) / 2
        for dx in (gap, -w - gap, -w / 2, gap + w / 2, -1.5 * w - gap, gap + w, -2 * w - gap,
                   gap + 2 * w, -3 * w - gap):
            offsets += [(dx, gap + lift), (dx, -h - gap - lift)]
    return offsets


class _Placer:
    """First-fit placement of text boxes, in display pixels: a box is taken by the first
    candidate offset that stays inside the Axes and overlaps nothing placed or blocked before;
    if none does, the inside candidate overlapping the fewest boxes (else the first candidate).
    Deterministic: no randomness, no renderer."""

    def __init__(self, ax: Axes) -> None:
        self.ax = ax
        self.scale = ax.figure.dpi / 72.0
        self.taken: list[tuple[float, float, float, float]] = []
        self.lines: list[tuple[float, float, float, float]] = []  # segments, display pixels
        self.texts: set[str] = set()  # ceiling labels already drawn
        self.roofs: set[tuple[float, float]] = set()  # (peak, bandwidth) of roofs drawn

    @property
    def frame_height(self) -> float:
        """The Axes' height in display pixels."""
        return self.ax.bbox.height

    def to_points(self, dx: float, dy: float) -> tuple[float, float]:
        return dx / self.scale, dy / self.scale

    def text_size(self, text: str, fontsize: float) -> tuple[float, float]:
        """Width and height in pixels, a little generous (padding, line height)."""
        width_pt = _text_width_pt(text, fontsize)
        return (width_pt + 0.4 * fontsize) * self.scale, 1.45 * fontsize * self.scale

    def block(self, x: float, y: float, radius: float) -> None:
        """Keep text off a marker of ``radius`` pixels at data point (x, y)."""
        px, py = self.ax.transData.transform((x, y))
        self.taken.append((px - radius, py - radius, px + radius, py + radius))

    def block_vertical(self, x: float, y0: float, y1: float) -> None:
        """Keep text off a vertical line from (x, y0) to (x, y1)."""
        (px, py0), (_, py1) = self.ax.transData.transform([(x, y0), (x, y1)])
        self.taken.append((px - 1.0, py0, px + 1.0, py1))

    def block_horizontal(self, y: float, x0: float, x1: float) -> None:
        """Keep text off a horizontal line from (x0, y) to (x1, y)."""
        (px0, py), (px1, _) = self.ax.transData.transform([(x0, y), (x1, y)])
        self.taken.append((px0, py - 1.0, px1, py + 1.0))

    def block_line(self, start: tuple[float, float], end: tuple[float, float]) -> None:
        """Keep text off the straight (in display space) line from ``start`` to ``end``."""
        (ax0, ay0), (ax1, ay1) = self.ax.transData.transform([start, end])
        self.lines.append((ax0, ay0, ax1, ay1))

    def place(self, x: float, y: float, size: tuple[float, float],
              offsets: list[tuple[float, float]], must_fit: bool = False):
        """The first offset (pixels) at which a box of ``size`` anchored at data point
        (x, y) clashes with nothing, and take that box; if none, the offset with the fewest
        clashes, or None (taking nothing) when ``must_fit``."""
        px, py = self.ax.transData.transform((x, y))
        w, h = size
        frame = self.ax.bbox.extents
        best, fewest = offsets[0], math.inf
        for dx, dy in offsets:
            box = (px + dx, py + dy, px + dx + w, py + dy + h)
            if not _inside(box, frame):
                continue
            clashes = sum(_overlap(box, t) for t in self.taken)
            clashes += sum(_crosses(box, line) for line in self.lines)
            if clashes == 0:
                best = (dx, dy)
                break
            if clashes < fewest:
                best, fewest = (dx, dy), clashes
        else:
            if must_fit:
                return None
        dx, dy = best
        self.taken.append((px + dx, py + dy, px + dx + w, py + dy + h))
        return dx, dy


def _crosses(box: tuple, line: tuple, pad: float = 1.5) -> bool:
    """Whether segment ``line`` (x0, y0, x1, y1) passes through ``box`` grown by ``pad``:
    clip the segment to the box's x range, then compare its y span there (Liang-Barsky style)."""
    left, bottom, right, top = box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad
    x0, y0, x1, y1 = line
    if x0 > x1:
        x0, y0, x1, y1 = x1, y1, x0, y0
    if x1 < left or x0 > right:
        return False
    if x1 == x0:
        return min(y0, y1) <= top and max(y0, y1) >= bottom
    slope = (y1 - y0) / (x1 - x0)
    xa, xb = max(x0, left), min(x1, right)
    ya, yb = y0 + slope * (xa - x0), y0 + slope * (xb - x0)
    return min(ya, yb) <= top and max(ya, yb) >= bottom


def _inside(box: tuple, frame: Sequence[float]) -> bool:
    return box[0] >= frame[0] and box[1] >= frame[1] and box[2] <= frame[2] and box[3] <= frame[3]


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@functools.lru_cache(maxsize=512)
def _text_width_pt(text: str, fontsize: float) -> float:
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, _height, _descent = TextToPath().get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False)
    return width


def plot_batch_sweep(reports: Sequence[Report], ax: Axes | None = None,
                     metric: str = "intensity") -> Axes:
    """Per-GEMM arithmetic intensity (``metric="intensity"``, FLOP/B) or attainable throughput
    (``"attainable"``, TFLOP/s) against batch size, from reports of one model on one entry at
    several batches. GEMMs with identical curves share a line; the ridge (or the peak) is the
    horizontal line that GEMMs cross to become compute-bound. Returns the Axes."""
    items = sorted(_as_list(reports), key=lambda r: r.batch)
    if metric not in ("intensity", "attainable"):
        raise PlotError(f"unknown metric {metric!r}; choose intensity or attainable")
    if len({r.hardware.name for r in items}) > 1 or len({r.dtype for r in items}) > 1:
        raise PlotError("a batch sweep needs reports of one hardware entry and one dtype")
    ax = ax if ax is not None else new_axes((10.0, 6.5))
    batches = [r.batch for r in items]
    series = _sweep_series(items, metric)
    for index, (gemms, ys) in enumerate(series):
        names = [g.name for g in gemms]
        ax.plot(batches, ys, marker="o", ms=4, ls=("-", "--", "-.", ":")[index % 4],
                label=_series_label(gemms), gid=f"sweep:{','.join(names)}")
    values = [y for _, ys in series for y in ys]
    _sweep_frame(ax, items[0], metric, batches, (min(values), max(values)))
    return ax


def _series_label(gemms: list) -> str:
    """The first copy's GEMM names, and ``x32`` when the curve stands for 32 copies."""
    copies = len({g.copy for g in gemms})
    first = [g.name for g in gemms if g.copy == 0] or [gemms[0].name]
    return compact_names(first) + (f" x{copies}" if copies > 1 else "")


def _sweep_series(reports: Sequence[Report], metric: str) -> list[tuple[list, list]]:
    """``(GEMMs, values per batch)``, GEMMs whose values coincide at every batch merged."""
    def value(result) -> float:
        if metric == "intensity":
            return result.gemm.intensity
        return result.attainable_flops_per_s / 1e12

    series: dict[tuple, tuple[list, list[float]]] = {}
    for position, result in enumerate(reports[0].results):
        ys = [value(r.results[position]) for r in reports]
        key = tuple(round(math.log10(y), 9) for y in ys)
        series.setdefault(key, ([], ys))[0].append(result.gemm)
    return list(series.values())


def _sweep_frame(ax: Axes, report: Report, metric: str, batches: list[int],
                 span: tuple[float, float]) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    roof = main_roof(report)
    level, what = ((roof.ridge, f"ridge {roof.ridge:.3g} FLOP/B") if metric == "intensity"
                   else (roof.peak_tflops, f"peak {roof.peak_tflops:g} TFLOP/s"))
    ax.axhline(level, color="#222222", ls="--", lw=1.2, gid=f"sweep-{metric}-limit",
               label=f"{what} ({report.dtype})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(min(span[0], level) / 1.5, max(span[1], level) * 1.5)
    ax.xaxis.set_major_locator(FixedLocator(batches))
    ax.xaxis.set_minor_locator(NullLocator())
    plain = FuncFormatter(lambda value, _pos: f"{value:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("batch size")
    ax.set_ylabel("arithmetic intensity (FLOP/byte)" if metric == "intensity"
                  else "attainable throughput (TFLOP/s)")
    from ..output.report import precision_text, step_text

    net = report.network
    step = step_text(net).split(", ", 1)[1]  # without the batch, which is the x axis
    ax.set_title(f"{net.name} on {report.hardware.name}: {metric} vs batch, {step}\n"
                 f"{precision_text(net)}", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    _legend_below(ax)


def check_plot_path(path: str | Path) -> str:
    """The format to write ``path`` in, from its extension (png, svg, pdf); PlotError for any
    other extension or a missing directory. Cheap: imports no matplotlib."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        got = f"'.{suffix}'" if suffix else "no extension"
        raise PlotError(f"{path}: cannot write a plot with {got}; "
                        f"use a file name ending in .png, .svg or .pdf")
    if not path.parent.is_dir():
        raise PlotError(f"{path}: cannot write the plot: directory {path.parent} does not exist")
    return suffix


def save_plot(reports: Report | Sequence[Report], path: str | Path, **options: Any) -> Path:
    """Draw ``reports`` (see ``plot_roofline``, which takes ``options``) and write the chart to
    ``path`` as PNG, SVG or PDF, chosen by its extension. Returns the path."""
    check_plot_path(path)
    return save_chart(plot_roofline(reports, **options), path)


def save_chart(ax: Axes, path: str | Path) -> Path:
    """Write the figure of ``ax`` to ``path`` (PNG, SVG or PDF by its extension)."""
    fmt = check_plot_path(path)
    try:
        _figure(ax).savefig(path, format=fmt, bbox_inches="tight", dpi=110,
                          metadata=_SAVE_METADATA[fmt])
    except OSError as exc:
        raise PlotError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    return Path(path)


def plot_comparison(comparison: Comparison, ax: Axes | None = None) -> Axes:
    """Step time by device as horizontal bars, each split into memory-bound time (red) and
    compute-bound time (blue), GEMMs and other ops alike, labelled with the step time, the
    speedup over the baseline (the top bar) and the dtype a device ran when it lacks the
    model's. Log-free, so bar lengths compare directly; many devices stay readable (one row
    each). Returns the Axes."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter

    from ..output.report import step_text
    from ..units import seconds

    reports = list(comparison.reports)
    if ax is None:
        figure = _figure_class()(figsize=(9.0, 2.0 + 0.5 * len(reports)), dpi=100)
        ax = figure.add_axes((0.27, 0.7 / (2.0 + 0.5 * len(reports)), 0.68,
                              0.5 * len(reports) / (2.0 + 0.5 * len(reports))))
    names = [r.hardware.name for r in reports]
    rows = list(range(len(reports)))[::-1]  # the baseline on top
    times = [r.totals["time_s"] for r in reports]
    scale, unit = _time_unit(max(times))
    fractions = [r.totals["memory_bound_time_fraction"] for r in reports]
    wide = max(times) / min(times) > COMPARISON_LOG_SPAN
    if wide:  # log scale: a bar cannot be split, so it takes the colour of its larger share
        colors = [BOUND_COLORS["memory" if f >= 0.5 else "compute"] for f in fractions]
        ax.barh(rows, [t / scale for t in times], color=colors, height=0.6, gid="bars-step")
        ax.set_xscale("log")
        ax.set_xlim(min(times) / scale / 2, max(times) / scale * 12)
        handles = [Patch(color=BOUND_COLORS[k], label=f"mostly {k}-bound") for k in BOUND_COLORS]
        ax.legend(handles=handles, **_below_axes(ax))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    else:  # linear: each bar split into memory-bound and compute-bound time
        memory = [t * f / scale for t, f in zip(times, fractions)]
        compute = [t / scale - m for t, m in zip(times, memory)]
        ax.barh(rows, memory, color=BOUND_COLORS["memory"], height=0.6, gid="bars-memory",
                label="memory-bound time (GEMMs and other ops)")
        ax.barh(rows, compute, left=memory, color=BOUND_COLORS["compute"], height=0.6,
                gid="bars-compute", label="compute-bound time (GEMMs and other ops)")
        ax.set_xlim(0, max(times) / scale * 1.35)
        ax.legend(**_below_axes(ax))
    for row, report, t, f in zip(rows, reports, times, fractions):
        text = f"{seconds(t)}  {comparison.speedup(report):.2f}x"
        if report.dtype != comparison.requested_dtype:
            text += f"  ({report.dtype})"
        if wide:
            text += f"  {f:.0%} mem"
        x = t / scale * (1.08 if wide else 1.0) + (0 if wide else max(times) / scale * 0.01)
        ax.text(x, row, text, va="center", ha="left", fontsize=LABEL_SIZE + 1,
                gid=f"bar-label:{report.hardware.name}")
    ax.set_yticks(rows, names, fontsize=LABEL_SIZE + 1)
    net = comparison.baseline.network
    ax.set_title(f"{net.name}, {step_text(net)}", fontsize=LABEL_SIZE + 1)
    ax.set_xlabel(f"step time ({unit}{', log scale' if wide else ''}); "
                  f"speedup over {names[0]}", fontsize=LABEL_SIZE + 1)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    net = reports[0].network
    ax.set_title(f"{net.name}, batch {net.batch}, {net.mode}: step time by device\n"
                 f"{comparison.requested_dtype} (devices without it run the nearest dtype)",
                 fontsize=LABEL_SIZE + 2)
    return ax


def _below_axes(ax: Axes) -> dict[str, Any]:
    """Legend options that put it in one row under the x-axis label, clear of the title."""
    height_in = ax.get_position().height * _figure(ax).get_figheight()
    return dict(loc="upper center", bbox_to_anchor=(0.5, -0.62 / height_in), ncol=2,
                fontsize=LABEL_SIZE + 1, frameon=False)


#: Above this ratio of slowest to fastest step the comparison chart switches to a log scale.
COMPARISON_LOG_SPAN = 20


def _time_unit(seconds_max: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds_max >= scale:
            return scale, unit
    return 1e-9, "ns"
