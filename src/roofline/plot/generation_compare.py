"""The comparison chart of whole generations (``compare --prompt P --generate G``): each
device's roofline latency as a horizontal bar split into its time to first token (the
prefill) and its decode steps, labelled with its output tokens/s and their ratio to the
baseline's, and whether the generation fits; its predicted latency a diamond on its row where
it has a prediction beyond its roofline (``Comparison.predicts``). Linear, so bar lengths
compare directly."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PlotError
from .compare import Handle, bar_axes, bar_frame, predicted_marks, time_unit
from .figure import below_axes
from .style import BOUND_COLORS, LABEL_SIZE

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.generation import Generation
    from ..analysis.whatif_comparison import Comparison

PREFILL_COLOR = BOUND_COLORS["compute"]
DECODE_COLOR = "#ff7f0e"


def plot_generation_comparison(comparison: Comparison, ax: Axes | None = None) -> Axes:
    """A bar a device (the baseline on top): its generation's roofline latency, the time to
    first token and the decode steps stacked; its tokens/s and speedup at the bar's end, and
    its predicted latency a diamond. Returns the Axes."""
    from ..units import seconds, si, times

    if not comparison.generating:
        raise PlotError("a generation chart needs a comparison of generations (prompt and "
                        "generate)")
    reports = list(comparison.reports)
    gens: list[Generation] = [g for r in reports if (g := r.generation) is not None]
    ax = ax if ax is not None else bar_axes(len(reports))
    rows = list(range(len(reports)))[::-1]  # the baseline on top
    predicted = [g.predicted_latency_s if comparison.predicts(r) else None
                 for r, g in zip(reports, gens)]
    longest = max([g.latency_s for g in gens] + [p for p in predicted if p is not None])
    scale, unit = time_unit(longest)
    first = [g.ttft_s / scale for g in gens]
    handles: list[Handle] = [ax.barh(rows, first, color=PREFILL_COLOR, height=0.6,
                                     gid="bars-ttft",
                                     label="time to first token (the prefill), roofline"),
                             ax.barh(rows, [g.decode_s / scale for g in gens], left=first,
                                     color=DECODE_COLOR, height=0.6, gid="bars-decode",
                                     label="decode steps, roofline")]
    handles += predicted_marks(ax, rows, predicted, scale, "predicted-latency",
                               "predicted latency (each device's own basis)")
    for row, report, g, guess in zip(rows, reports, gens, predicted):
        text = (f"{si(g.tokens_per_s, '')}tokens/s  "
                f"{times(comparison.generation_speedup(report) or 1.0)}")
        if comparison.fits(report) is False:
            text += "  does not fit"
        if guess is not None:
            text += f"\npredicted {si(g.predicted_tokens_per_s, '')}tokens/s, {seconds(guess)}"
        end = max(g.latency_s, guess or 0.0) / scale
        ax.text(end + longest / scale * 0.02, row, text, va="center", ha="left",
                fontsize=LABEL_SIZE + 1, linespacing=1.3,
                gid=f"bar-label:{report.hardware.name}")
    ax.set_xlim(0, longest / scale * 1.6)
    ax.legend(handles=handles, **below_axes(ax))
    ax.set_yticks(rows, [r.hardware.name for r in reports], fontsize=LABEL_SIZE + 1)
    ax.set_xlabel(f"roofline latency of the whole generation ({unit}), a lower bound; "
                  f"tokens/s over {reports[0].hardware.name}'s", fontsize=LABEL_SIZE + 1)
    bar_frame(ax)
    net, g = reports[0].network, gens[0]
    served = (f", over {comparison.tp * comparison.pp} GPUs each, tp {comparison.tp} x pp "
              f"{comparison.pp} (tokens/s the pipeline's, {comparison.pp} batches in flight)"
              if comparison.pp > 1 else
              f", over {comparison.tp} GPUs each (tokens/s the group's)"
              if comparison.tp > 1 else "")
    ax.set_title(f"{net.name}, batch {g.batch}: a generation of prompt {g.prompt} + "
                 f"{g.generate} tokens by device{served}\n{comparison.requested_dtype} (devices "
                 f"without it run the nearest dtype)", fontsize=LABEL_SIZE + 2)
    return ax
