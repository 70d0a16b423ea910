"""Roofline charts: Reports drawn on a matplotlib Axes, and written to PNG, SVG or PDF.

Every function takes result objects and an optional ``ax`` and returns the Axes. matplotlib is
imported inside the functions, so ``import roofline.plot`` stays light, and nothing here
touches pyplot: a chart drawn without an ``ax`` gets a ``matplotlib.figure.Figure`` of its own
(a ``RooflineFigure``, which Jupyter shows inline as PNG), so it renders headless with Agg and
is freed like any other object.

Modules: ``data`` (what is drawn, as numbers: roofs, grouped points, axis ranges, sweep curves;
no drawing), ``labels`` (the label-placement engine), ``roofline`` (``plot_roofline``),
``sweep`` (``plot_batch_sweep``), ``generation_sweep`` (``plot_generation_sweep``: a sweep of
whole generations, tokens/s and time per output token against batch), ``compare``
(``plot_comparison``; ``generation_compare``, ``plot_generation_comparison``: each device's
generation latency), ``plan`` (``plot_plan``: step time against GPUs, the layout search's
front), ``figure`` (the pyplot-free figure and legend placement), ``save`` (formats, path
checks, writing), ``style`` (colours, markers, font size).
"""

from __future__ import annotations

from ..output.report import compact_names
from .compare import plot_comparison
from .generation_compare import plot_generation_comparison
from .generation_sweep import plot_generation_sweep
from .plan import plot_plan
from .roofline import plot_roofline
from .save import check_plot_path, save_chart, save_plot
from .sweep import plot_batch_sweep

__all__ = [
    "check_plot_path",
    "compact_names",  # output's, re-exported as before: a chart's labels are written with it
    "plot_batch_sweep",
    "plot_comparison",
    "plot_generation_comparison",
    "plot_generation_sweep",
    "plot_plan",
    "plot_roofline",
    "save_chart",
    "save_plot",
]
