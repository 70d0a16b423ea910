"""The chart of a sweep of whole generations (``sweep --prompt P --generate G``): output
tokens/s on the device (left axis) and the time per output token (right axis) against batch,
the roofline's solid and, where the entry predicts beyond its roofline, the predicted dashed;
the batches whose whole generation does not fit in memory shaded (``output.fit_bands``, as
the HTML page shades them). What a serving user weighs: tokens/s rising with the batch while
each sequence waits longer for each token, up to the batch that fits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PlotError
from ..units import seconds, si
from .figure import label_log_axis, legend_below, new_axes
from .style import BOUND_COLORS
from .sweep import mark_no_fit, swept_axis

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.generation import Generation
    from ..analysis.whatif_sweep import Sweep

RATE_COLOR = BOUND_COLORS["compute"]
TIME_COLOR = "#ff7f0e"


def plot_generation_sweep(sweep: Sweep, ax: Axes | None = None) -> Axes:
    """Output tokens/s (left, log) and time per output token (right, log; the time to first
    token where one token is generated) against batch, roofline and predicted, the batches
    past the largest whose whole generation fits shaded. Returns the left Axes."""
    if not sweep.generating:
        raise PlotError("a generation chart needs a sweep of generations (prompt and generate)")
    from ..analysis.predict import basis_of, predicts
    from ..output.generations import wait_text
    from ..output.precision import precision_text
    from ..output.serving_tp import shard_words, where_text

    reports = list(sweep.reports)
    gens: list[Generation] = [g for r in reports if (g := r.generation) is not None]
    first = gens[0]
    batches = [r.batch for r in reports]
    ax = ax if ax is not None else new_axes((10.0, 6.5))
    right = ax.twinx()
    basis = basis_of(sweep.hardware)
    predicted = predicts(sweep.hardware)
    what = wait_text(first)
    for guess in (False, True)[:1 + predicted]:
        style, name = ("--", f"predicted ({basis})") if guess else ("-", "roofline")
        rates = [g.predicted_tokens_per_s if guess else g.tokens_per_s for g in gens]
        ax.plot(batches, rates, marker="o", ms=4, ls=style, color=RATE_COLOR,
                label=f"tokens/s, {name}", gid=f"generation-rate:{name}")
        waits = [g.wait_s(guess) for g in gens]
        right.plot(batches, waits, marker="s", ms=4, ls=style, color=TIME_COLOR,
                   label=f"{what}, {name}", gid=f"generation-time:{name}")
    mark_no_fit(ax, reports, batches, "batch")
    for axes in (ax, right):
        axes.set_yscale("log")
        low, high = axes.dataLim.intervaly
        axes.set_ylim(low / 1.5, high * 1.5)
    swept_axis(ax, batches)
    label_log_axis(ax.yaxis, lambda value: si(value, ""))
    label_log_axis(right.yaxis, seconds)
    ax.set_xlabel("batch size (sequences generated at once)")
    ax.set_ylabel(f"output tokens/s {where_text(reports[0])}", color=RATE_COLOR)
    right.set_ylabel(what, color=TIME_COLOR)
    net = reports[0].network
    ax.set_title(f"{net.name} on {sweep.hardware.name}{shard_words(reports[0])}: a generation "
                 f"of prompt {first.prompt} + {first.generate} tokens, tokens/s and {what} vs "
                 f"batch\n"
                 f"{precision_text(net)}; roofline times are lower bounds", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    legend_below(ax, right)
    return ax
