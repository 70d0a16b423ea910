"""Writing charts: the file formats (PNG, SVG or PDF, chosen by the extension), a path
checked before any work is done, and ``save_plot`` / ``save_chart``. Saved files carry no
creation date, so the same chart gives the same SVG or PDF bytes."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PlotError
from ..files.atomic import write_atomic
from .figure import figure_of
from .roofline import plot_roofline

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.report import Report

PLOT_FORMATS = ("png", "svg", "pdf")
_SAVE_METADATA: dict[str, dict[str, str | None]] = {
    "png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}


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
    """Write the figure of ``ax`` to ``path`` (PNG, SVG or PDF by its extension), atomically
    (``files.atomic``): a full disk leaves an existing chart as it was, never a partial one.
    The chart is drawn in memory first: matplotlib's PDF writer, its stream cut by a full
    disk, fails again in its own cleanup (a zlib error, not an OSError)."""
    fmt = check_plot_path(path)
    buffer = io.BytesIO()
    figure_of(ax).savefig(buffer, format=fmt, bbox_inches="tight", dpi=110,
                          metadata=_SAVE_METADATA[fmt])
    try:
        write_atomic(path, buffer.getvalue())
    except OSError as exc:
        raise PlotError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    return Path(path)
