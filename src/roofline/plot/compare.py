"""The comparison chart: one model's step time on several devices as horizontal bars, split
into memory-bound and compute-bound time, GEMMs and other ops alike (a linear axis), or, when
the slowest step is more than ``COMPARISON_LOG_SPAN`` times the fastest, whole bars on a log
axis coloured by their larger share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..output.report import step_text
from .figure import below_axes, figure_class
from .style import BOUND_COLORS, LABEL_SIZE

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.report import Report
    from ..analysis.whatif import Comparison

#: Above this ratio of slowest to fastest step the comparison chart switches to a log scale.
COMPARISON_LOG_SPAN = 20


def plot_comparison(comparison: Comparison, ax: Axes | None = None) -> Axes:
    """Step time by device as horizontal bars, each split into memory-bound (red) and
    compute-bound (blue) time of GEMMs and other ops, labelled with the step time, the speedup
    over the baseline (the top bar) and the dtype a device ran when it lacks the model's.
    Linear, so bar lengths compare directly, unless the times span more than
    ``COMPARISON_LOG_SPAN``; many devices stay readable (one row each). Returns the Axes."""
    reports = list(comparison.reports)
    ax = ax if ax is not None else _bar_axes(len(reports))
    names = [r.hardware.name for r in reports]
    rows = list(range(len(reports)))[::-1]  # the baseline on top
    times = [r.totals["time_s"] for r in reports]
    scale, unit = _time_unit(max(times))
    fractions = [r.totals["memory_bound_time_fraction"] for r in reports]
    wide = max(times) / min(times) > COMPARISON_LOG_SPAN
    if wide:
        _whole_bars(ax, rows, [t / scale for t in times], fractions)
    else:
        _split_bars(ax, rows, times, fractions, scale)
    _bar_labels(ax, comparison, rows, scale, wide)
    ax.set_yticks(rows, names, fontsize=LABEL_SIZE + 1)
    ax.set_xlabel(f"step time ({unit}{', log scale' if wide else ''}); "
                  f"speedup over {names[0]}", fontsize=LABEL_SIZE + 1)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    net = reports[0].network
    ax.set_title(f"{net.name}, {step_text(net)}: step time by device\n"
                 f"{comparison.requested_dtype} (devices without it run the nearest dtype)",
                 fontsize=LABEL_SIZE + 2)
    return ax


def _bar_axes(count: int) -> Axes:
    """An Axes on a new RooflineFigure sized for ``count`` bars: 2 in plus 0.5 in a bar tall,
    room on the left for the device names and below for the legend."""
    height_in = 2.0 + 0.5 * count
    figure = figure_class()(figsize=(9.0, height_in), dpi=100)
    return figure.add_axes((0.27, 0.7 / height_in, 0.68, 0.5 * count / height_in))


def _whole_bars(ax: Axes, rows: list[int], times: list[float], fractions: list[float]) -> None:
    """Log scale: a bar cannot be split, so it takes the colour of its larger share."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter

    colors = [BOUND_COLORS["memory" if f >= 0.5 else "compute"] for f in fractions]
    ax.barh(rows, times, color=colors, height=0.6, gid="bars-step")
    ax.set_xscale("log")
    ax.set_xlim(min(times) / 2, max(times) * 12)
    handles = [Patch(color=BOUND_COLORS[k], label=f"mostly {k}-bound") for k in BOUND_COLORS]
    ax.legend(handles=handles, **below_axes(ax))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))


def _split_bars(ax: Axes, rows: list[int], times_s: list[float], fractions: list[float],
                scale: float) -> None:
    """Linear: each bar split into memory-bound time (time x fraction) and compute-bound time
    (the rest), in units of ``scale`` seconds."""
    memory = [t * f / scale for t, f in zip(times_s, fractions)]
    compute = [t / scale - m for t, m in zip(times_s, memory)]
    ax.barh(rows, memory, color=BOUND_COLORS["memory"], height=0.6, gid="bars-memory",
            label="memory-bound time (GEMMs and other ops)")
    ax.barh(rows, compute, left=memory, color=BOUND_COLORS["compute"], height=0.6,
            gid="bars-compute", label="compute-bound time (GEMMs and other ops)")
    ax.set_xlim(0, max(times_s) / scale * 1.35)
    ax.legend(**below_axes(ax))


def _bar_labels(ax: Axes, comparison: Comparison, rows: list[int], scale: float,
                wide: bool) -> None:
    """Each bar's step time, its speedup over the baseline, the dtype it ran when not the
    model's, on a log axis its memory-bound share, and ``does not fit`` where the device's
    memory cannot hold the step (``Comparison.fits``), just right of the bar's end."""
    from ..units import seconds, times

    reports: list[Report] = list(comparison.reports)
    longest = max(r.totals["time_s"] for r in reports) / scale
    for row, report in zip(rows, reports):
        t, f = report.totals["time_s"], report.totals["memory_bound_time_fraction"]
        text = f"{seconds(t)}  {times(comparison.speedup(report))}"
        if report.dtype != comparison.requested_dtype:
            text += f"  ({report.dtype})"
        if wide:
            text += f"  {f:.0%} mem"
        if comparison.fits(report) is False:
            text += "  does not fit"
        x = t / scale * (1.08 if wide else 1.0) + (0 if wide else longest * 0.01)
        ax.text(x, row, text, va="center", ha="left", fontsize=LABEL_SIZE + 1,
                gid=f"bar-label:{report.hardware.name}")


def _time_unit(seconds_max: float) -> tuple[float, str]:
    """The scale (seconds per unit) and unit the axis is written in: the largest of s, ms and
    us that ``seconds_max`` reaches, else ns."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds_max >= scale:
            return scale, unit
    return 1e-9, "ns"
