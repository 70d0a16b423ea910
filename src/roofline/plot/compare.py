"""The comparison chart: one model's roofline step time on several devices as horizontal bars,
split into memory-bound and compute-bound time, GEMMs and other ops alike (a linear axis), or,
when the slowest step is more than ``COMPARISON_LOG_SPAN`` times the fastest, a dot per device
on a log axis coloured by its larger share (a bar's length on a log axis says nothing: it
starts wherever the axis does); each device's predicted step time a marker on its row, where
it has a prediction beyond the roofline (``Comparison.predicts``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from ..output.report import step_text
from ..output.times import parts_text
from ..units import three_digits
from .figure import below_axes, figure_class
from .style import BOUND_COLORS, LABEL_SIZE

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes

    from ..analysis.report import Report
    from ..analysis.whatif_comparison import Comparison

#: A legend's entry: an artist, or a group of them (the bars ``barh`` returns).
Handle = Union["Artist", tuple["Artist", ...]]

#: Above this ratio of slowest to fastest step the comparison chart switches to a log scale.
COMPARISON_LOG_SPAN = 20


def plot_comparison(comparison: Comparison, ax: Axes | None = None) -> Axes:
    """Roofline step time by device as horizontal bars, each split into memory-bound (red)
    and compute-bound (blue) time of GEMMs and other ops, labelled with the step time, the
    speedup over the baseline (the top bar) and the dtype a device ran when it lacks the
    model's; each device's predicted step time a diamond on its row, its time and speedup
    under the roofline's (the bars alone, named "step time", passed for what the tool
    predicts: 737 ms against a predicted 873 ms). Linear, so bar lengths compare directly,
    unless the times span more than ``COMPARISON_LOG_SPAN``; many devices stay readable (one
    row each). Returns the Axes."""
    reports = list(comparison.reports)
    ax = ax if ax is not None else bar_axes(len(reports))
    names = [r.hardware.name for r in reports]
    rows = list(range(len(reports)))[::-1]  # the baseline on top
    times = [r.totals["time_s"] for r in reports]
    predicted = [r.totals["predicted_time_s"] if comparison.predicts(r) else None
                 for r in reports]
    longest = max([*times, *(p for p in predicted if p is not None)])
    scale, unit = time_unit(longest)
    fractions = [r.totals["memory_bound_time_fraction"] for r in reports]
    wide = max(times) / min(times) > COMPARISON_LOG_SPAN
    if wide:
        handles = _step_dots(ax, rows, [t / scale for t in times], fractions)
        ax.set_xlim(min(times) / scale / 2, longest / scale * 40)
        ax.set_ylim(-0.6, len(rows) - 0.4)  # a bar's height of room about each row's dot
    else:
        handles = _split_bars(ax, rows, times, fractions, scale, parts_text(reports[0]))
        ax.set_xlim(0, longest / scale * 1.45)
    handles += predicted_marks(ax, rows, predicted, scale, "predicted-step",
                               "predicted step time (each device's own basis)")
    ax.legend(handles=handles, **below_axes(ax))
    _bar_labels(ax, comparison, rows, scale, wide)
    ax.set_yticks(rows, names, fontsize=LABEL_SIZE + 1)
    ax.set_xlabel(f"roofline step time ({unit}{', log scale' if wide else ''}), a lower "
                  f"bound; speedup over {names[0]}", fontsize=LABEL_SIZE + 1)
    bar_frame(ax)
    net = reports[0].network
    served = (f", one GPU of tp {comparison.tp} x pp {comparison.pp} each (one batch through "
              f"every stage, its all-reduces and hand-offs included)" if comparison.pp > 1 else
              f", one GPU of tp {comparison.tp} each (its all-reduces included)"
              if comparison.tp > 1 else "")
    ax.set_title(f"{net.name}, {step_text(net)}: roofline step time by device{served}\n"
                 f"{comparison.requested_dtype} (devices without it run the nearest dtype)",
                 fontsize=LABEL_SIZE + 2)
    return ax


def predicted_marks(ax: Axes, rows: list[int], predicted: list[float | None], scale: float,
                    gid: str, label: str) -> list[Handle]:
    """A diamond on each row with a predicted time (``None``: the device predicts nothing
    beyond its roofline), at ``predicted / scale``: the compare charts' one mark of it."""
    marked = [(row, p / scale) for row, p in zip(rows, predicted) if p is not None]
    if not marked:
        return []
    return [ax.scatter([x for _, x in marked], [row for row, _ in marked], marker="D", s=42,
                       color="#222222", edgecolors="white", linewidths=0.8, zorder=3, gid=gid,
                       label=label)]


def bar_frame(ax: Axes) -> None:
    """A bar chart's frame: light vertical grid lines behind the bars, no top or right spine
    (the compare charts' one look)."""
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def bar_axes(count: int) -> Axes:
    """An Axes on a new RooflineFigure sized for ``count`` bars: 2 in plus 0.5 in a bar tall,
    room on the left for the device names and below for the legend."""
    height_in = 2.0 + 0.5 * count
    figure = figure_class()(figsize=(9.0, height_in), dpi=100)
    return figure.add_axes((0.27, 0.7 / height_in, 0.68, 0.5 * count / height_in))


def _step_dots(ax: Axes, rows: list[int], times: list[float],
               fractions: list[float]) -> list[Handle]:
    """Log scale: a dot a device at its step time, in the colour of its larger share (a bar
    from the axis' left end would read as a length, which a log axis does not give). Returns
    the legend's handles."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    colors = [BOUND_COLORS["memory" if f >= 0.5 else "compute"] for f in fractions]
    ax.scatter(times, rows, s=110, color=colors, edgecolors="white", linewidths=0.8,
               zorder=3, gid="dots-step")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: three_digits(value)))
    return [Line2D([], [], ls="none", marker="o", ms=9, color=BOUND_COLORS[k],
                   label=f"roofline step time, mostly {k}-bound") for k in BOUND_COLORS]


def _split_bars(ax: Axes, rows: list[int], times_s: list[float], fractions: list[float],
                scale: float, parts: str = "GEMMs and other ops") -> list[Handle]:
    """Linear: each bar split into memory-bound time (time x fraction) and compute-bound time
    (the rest), in units of ``scale`` seconds, of ``parts`` (``output.times.parts_text``: the
    recomputation named where the step has one). Returns the legend's handles."""
    memory = [t * f / scale for t, f in zip(times_s, fractions)]
    compute = [t / scale - m for t, m in zip(times_s, memory)]
    return [ax.barh(rows, memory, color=BOUND_COLORS["memory"], height=0.6, gid="bars-memory",
                    label=f"memory-bound roofline time ({parts})"),
            ax.barh(rows, compute, left=memory, color=BOUND_COLORS["compute"], height=0.6,
                    gid="bars-compute", label=f"compute-bound roofline time ({parts})")]


def _bar_labels(ax: Axes, comparison: Comparison, rows: list[int], scale: float,
                wide: bool) -> None:
    """Each bar's roofline step time, its speedup over the baseline, the dtype it ran when not
    the model's, on a log axis its memory-bound share, and ``does not fit`` where the device's
    memory cannot hold the step (``Comparison.fits``); under them, where the device has a
    prediction, its predicted step time and speedup (none where the baseline has no
    prediction): just right of the bar's end or its diamond, whichever is further."""
    from ..units import seconds, times

    reports: list[Report] = list(comparison.reports)
    longest = max(r.totals["time_s"] for r in reports) / scale
    for row, report in zip(rows, reports):
        t, f = report.totals["time_s"], report.totals["memory_bound_time_fraction"]
        text = f"roofline {seconds(t)}  {times(comparison.speedup(report))}"
        if report.dtype != comparison.requested_dtype:
            text += f"  ({report.dtype})"
        if wide:
            text += f"  {f:.0%} mem"
        if comparison.fits(report) is False:
            text += "  does not fit"
        end = t
        if comparison.predicts(report):
            p, speedup = report.totals["predicted_time_s"], comparison.predicted_speedup(report)
            text += f"\npredicted {seconds(p)}" + (f"  {times(speedup)}" if speedup else "")
            end = max(t, p)
        x = end / scale * (1.08 if wide else 1.0) + (0 if wide else longest * 0.02)
        ax.text(x, row, text, va="center", ha="left", fontsize=LABEL_SIZE + 1,
                linespacing=1.3, gid=f"bar-label:{report.hardware.name}")


def time_unit(seconds_max: float) -> tuple[float, str]:
    """The scale (seconds per unit) and unit the axis is written in: the largest of s, ms and
    us that ``seconds_max`` reaches, else ns."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds_max >= scale:
            return scale, unit
    return 1e-9, "ns"
