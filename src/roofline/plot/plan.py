"""The layout-search chart: predicted step time against GPU count (both log scales), one point
per fitting layout (coloured by what bounds it), the Pareto front as a line with each point's
layout, the front's roofline step times (lower bounds) as a dotted line under it, and ideal
linear scaling from the front's first point for reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import PlotError
from ..units import seconds
from .figure import label_log_axis, legend_below, new_axes
from .style import LABEL_SIZE

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.plan import Plan

#: What bounds a layout (``LayoutResult.bound``), by colour.
PLAN_COLORS = {"compute": "#1f77b4", "memory": "#d62728", "communication": "#ff7f0e",
               "pipeline bubble": "#9467bd"}


def plot_plan(plan: Plan, ax: Axes | None = None) -> Axes:
    """Every fitting layout's predicted step time against its GPU count, the front joined and
    labelled, its roofline times below it, and the ideal (time x GPUs constant) from the
    front's first point. Returns the Axes."""
    from ..output.plan import (
        FRONT_KEY,
        FRONT_ROOF_KEY,
        IDEAL_KEY,
        STEP_AXIS,
        bound_key,
        gpus_axis,
        step_settings,
    )

    fitting = plan.fitting
    if not fitting:
        raise PlotError("no layout fits in memory: nothing to draw")
    ax = ax if ax is not None else new_axes((10.0, 6.5))
    for bound, color in PLAN_COLORS.items():
        points = [r.predicted for r in fitting if r.predicted.bound == bound]
        if points:
            ax.scatter([r.layout.gpus for r in points], [r.step_s for r in points], s=14,
                       color=color, alpha=0.45, lw=0, label=bound_key(bound),
                       gid=f"plan:{bound}")
    front = plan.front
    xs, ys = [r.layout.gpus for r in front], [r.predicted_step_s for r in front]
    ax.plot(xs, ys, color="#222222", marker="o", ms=6, lw=1.6,
            label=FRONT_KEY, gid="plan-front")
    ax.plot(xs, [r.step_s for r in front], color="#222222", ls=":", lw=1.2,
            label=FRONT_ROOF_KEY, gid="plan-front-roofline")
    ideal = [ys[0] * xs[0] / x for x in xs]
    ax.plot(xs, ideal, color="#888888", ls="--", lw=1, label=IDEAL_KEY, gid="plan-ideal")
    for r in front:
        ax.annotate(r.layout.label, (r.layout.gpus, r.predicted_step_s), xytext=(6, 6),
                    textcoords="offset points", fontsize=LABEL_SIZE - 2, rotation=20)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    counts = sorted({r.layout.gpus for r in fitting})
    ax.set_xticks(counts, [str(c) for c in counts])
    ax.set_xlim(counts[0] / 1.4, counts[-1] * 1.6)
    ax.set_ylim(*ax.get_ylim())  # as the points set them, fixed before they are labelled
    label_log_axis(ax.yaxis, seconds)  # "500 ms", "1 s", not "5x10^-1", "10^0"
    ax.set_xlabel(gpus_axis(plan), fontsize=LABEL_SIZE)  # with the counts where none fits
    ax.set_ylabel(STEP_AXIS, fontsize=LABEL_SIZE)
    # the step's settings as the table's header gives them (a model without a seq has none:
    # "x seq None" until 0.9.0; nor did the title say the recomputation plan leaves out)
    ax.set_title(f"{plan.network.name} on {plan.hardware.name}: training step\n"
                 f"{step_settings(plan)}", fontsize=LABEL_SIZE + 1)
    ax.grid(True, which="both", alpha=0.25)
    legend_below(ax)
    return ax
