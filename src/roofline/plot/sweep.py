"""The sweep chart: per-GEMM arithmetic intensity (FLOP/B) or attainable throughput
(TFLOP/s) against batch size (or sequence length, when only it varies), with the ridge (or the
peak) as the line a GEMM crosses to become compute-bound. Log-log (x in powers of 2); GEMMs
with identical curves share one line (``data.sweep_series``), and so do the non-GEMM ops the
sweep moves (``data.op_sweep_series``: a decode step's attention over its KV cache), grey."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import PlotError
from ..units import rate_unit, three_digits
from .data import (
    as_reports,
    main_roof,
    op_sweep_series,
    sweep_series,
)
from .figure import label_log_axis, legend_below, new_axes
from .labels import text_width_pt

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.report import Report


def plot_batch_sweep(reports: Sequence[Report], ax: Axes | None = None,
                     metric: str = "intensity") -> Axes:
    """Per-GEMM arithmetic intensity (``metric="intensity"``, FLOP/B) or attainable throughput
    (``"attainable"``, TFLOP/s) against batch size, from reports of one model on one entry at
    several batches, or at one batch and several sequence lengths (then seq is the x axis).
    GEMMs with identical curves share a line, as do the ops whose value the sweep changes
    (grey, labelled by kind and ``(op)``); the ridge (or the peak) is the horizontal line
    that GEMMs cross to become compute-bound. Returns the Axes."""
    items = as_reports(reports)
    if metric not in ("intensity", "attainable"):
        raise PlotError(f"unknown metric {metric!r}; choose intensity or attainable")
    if len({r.hardware.name for r in items}) > 1 or len({r.dtype for r in items}) > 1:
        raise PlotError("a batch sweep needs reports of one hardware entry and one dtype")
    axis = "seq" if len({r.batch for r in items}) == 1 and len(
        {r.network.seq for r in items}) > 1 else "batch"
    if axis == "batch" and len({r.network.seq for r in items}) > 1:
        raise PlotError("a sweep chart draws one swept axis: give reports at one batch or at "
                        "one seq (a batch x seq grid is a table)")
    items = sorted(items, key=lambda r: (r.network.seq or 0) if axis == "seq" else r.batch)
    series, ops = sweep_series(items, metric), op_sweep_series(items, metric)
    values = [y for _, ys in [*series, *ops] for y in ys if y is not None]
    if not values:  # min() of nothing was a ValueError traceback
        raise PlotError(f"nothing to draw: the step has no GEMM, and no op whose value the "
                        f"{axis} moves (its table holds every point)")
    ax = ax if ax is not None else new_axes((10.0, 6.5))
    batches = [(r.network.seq or 0) if axis == "seq" else r.batch for r in items]
    for index, (curve, ys) in enumerate(series):
        ax.plot(batches, _gaps(ys), marker="o", ms=4, ls=("-", "--", "-.", ":")[index % 4],
                label=curve.label, gid=f"sweep:{curve.spelled}")
    for index, (label, ys) in enumerate(ops):  # the ops the sweep moves, grey, square markers
        ax.plot(batches, _gaps(ys), marker="s", ms=4, color=("#555555", "#999999")[index % 2],
                ls=(":", "-.")[index % 2], label=label, gid=f"sweep-op:{label}")
    mark_no_fit(ax, items, batches, axis)
    _sweep_frame(ax, items[0], metric, batches, (min(values), max(values)), axis)
    return ax


def _gaps(ys: list[float | None]) -> list[float]:
    """A curve's values, NaN (no point, a gap in the line) where a point has no such GEMM."""
    return [math.nan if y is None else y for y in ys]


def mark_no_fit(ax: Axes, items: list[Report], batches: list[int], axis: str) -> None:
    """Shade the batches (or seqs) whose step does not fit in the device's memory (they stay
    drawn): ``output.fit_bands``, as the HTML page shades them."""
    from ..output.fit_bands import no_fit_bands

    for band in no_fit_bands(items, batches, axis):
        ax.axvspan(band.low, band.high, color="#555555" if band.darker else "#888888",
                   alpha=0.22 if band.darker else 0.18, lw=0,
                   gid="sweep-no-memory" if band.darker else "sweep-no-fit", label=band.label)


def _sweep_frame(ax: Axes, report: Report, metric: str, batches: list[int],
                 span: tuple[float, float], axis: str = "batch") -> None:
    """The limit line (ridge or peak), log axes (batch in powers of 2, each batch a tick), axis
    names, the title (the step and precision in output/'s words) and the legend."""
    from ..output.precision import precision_text
    from ..output.report import step_text
    from ..output.serving_tp import shard_words

    roof = main_roof(report)
    level, what = ((roof.ridge, f"ridge {three_digits(roof.ridge)} FLOP/B") if metric == "intensity"
                   else (roof.peak_tflops,
                         f"peak {roof.peak_tflops:g} {rate_unit(report.dtype)}"))
    ax.axhline(level, color="#222222", ls="--", lw=1.2, gid=f"sweep-{metric}-limit",
               label=f"{what} ({report.dtype})")
    ax.set_yscale("log")
    ax.set_ylim(min(span[0], level) / 1.5, max(span[1], level) * 1.5)
    swept_axis(ax, batches)
    label_log_axis(ax.yaxis, three_digits)
    ax.set_xlabel("batch size" if axis == "batch" else "sequence length (tokens)")
    ax.set_ylabel("arithmetic intensity (FLOP/byte)" if metric == "intensity"
                  else "attainable throughput (TFLOP/s)")
    net = report.network
    parts = step_text(net).split(", ")  # without the swept one, which is the x axis
    step = ", ".join(p for p in parts if not p.startswith(f"{axis} "))
    ax.set_title(f"{net.name} on {report.hardware.name}{shard_words(report)}: {metric} vs "
                 f"{axis}, {step}\n"
                 f"{precision_text(net)}", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    legend_below(ax)


def swept_axis(ax: Axes, values: list[int]) -> None:
    """The swept x axis: log in powers of 2, each swept value a tick, whole (1048576, not
    1.04858e+06), labelled where its label clears its neighbours' (``labelled_ticks``)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_minor_locator(NullLocator())
    shown = labelled_ticks(ax, values)
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda value, _pos: f"{value:.0f}" if value in shown else ""))


#: The room a tick label keeps clear on each side, in ems.
TICK_GAP_EM = 0.3


def labelled_ticks(ax: Axes, values: list[int]) -> set[int]:
    """The swept values whose tick gets its label: each whose label clears the last one
    labelled, from the smallest; the largest always, the ones before it that it would touch
    given up (a seq sweep 1..2^20 has 21 ticks, and from 8192 on their labels ran into each
    other on the 10-inch chart). Widths in points from the font size, so any dpi."""
    import math

    low, high = ax.get_xlim()
    width_pt = ax.get_window_extent().width * 72 / ax.figure.dpi
    ticks = ax.xaxis.get_major_ticks()
    size = float(ticks[0].label1.get_fontsize()) if ticks else 10.0

    def at(value: float) -> float:
        return (math.log(value / low) / math.log(high / low)) * width_pt

    def half(value: int) -> float:  # the label's width from its glyphs (labels.text_width_pt)
        return (text_width_pt(f"{value}", size) + TICK_GAP_EM * size) / 2

    def clear(a: int, b: int) -> bool:
        return at(b) - half(b) >= at(a) + half(a)

    shown: list[int] = []
    for value in sorted(set(values)):
        if not shown or clear(shown[-1], value):
            shown.append(value)
    last = max(values)
    if shown[-1] != last:
        while shown and not clear(shown[-1], last):
            shown.pop()
        shown.append(last)
    return set(shown)
