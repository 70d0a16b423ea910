"""Writing charts: the file formats (PNG, SVG or PDF, chosen by the extension), a path
checked before any work is done, and ``save_plot`` / ``save_chart``. Saved files carry no
creation date, so the same chart gives the same SVG or PDF bytes."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PlotError, option
from ..files.atomic import write_atomic
from .figure import figure_of
from .roofline import plot_roofline

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..analysis.report import Report

PLOT_FORMATS = ("png", "svg", "pdf")
_SAVE_METADATA: dict[str, dict[str, str | None]] = {
    "png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}


def check_plot_path(path: str | Path, force: bool = False) -> str:
    """The format to write ``path`` in, from its extension (png, svg, pdf); PlotError for an
    empty path, no file name, any other extension, a file that exists (unless ``force``: a
    chart never replaces a file unasked), or a directory that is missing or takes no new file
    (a file made and removed there at once: the chart's atomic write makes one too). Cheap: imports
    no matplotlib."""
    if str(path) == "":  # Path('') is Path('.'): said before it becomes one
        raise PlotError("the plot path is empty: give a file name ending in .png, .svg or .pdf")
    if str(path).endswith(tuple(sep for sep in (os.sep, os.altsep) if sep)):
        # Path('x.png/') is Path('x.png'): the chart would be written as the file x.png
        raise PlotError(f"'{path}' ends in a path separator, a directory's path: give a file "
                        f"name ending in .png, .svg or .pdf")
    path = Path(path)
    if not path.name:
        raise PlotError(f"'{path}' is no file name: give one ending in .png, .svg or .pdf")
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        got = f"'.{suffix}'" if suffix else "no extension"
        raise PlotError(f"{path}: cannot write a plot with {got}; "
                        f"use a file name ending in .png, .svg or .pdf")
    if not path.parent.is_dir():
        what = "is not a directory" if path.parent.exists() else "does not exist"
        raise PlotError(f"{path}: cannot write the plot: {path.parent} {what}")
    if not force and (path.exists() or path.is_symlink()):
        raise _exists(path)
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".roofline-check-"):
            pass
    except OSError as exc:
        raise PlotError(f"{path}: cannot write the plot: cannot make a file in {path.parent} "
                        f"({exc.strerror or exc})") from None
    return suffix


def _exists(path: str | Path) -> PlotError:
    """The refusal to replace a file without ``force``."""
    return PlotError(f"{path} exists; give {option('force', 'True')} to replace it")


def save_plot(reports: Report | Sequence[Report], path: str | Path, *, force: bool = False,
              **options: Any) -> Path:
    """Draw ``reports`` (see ``plot_roofline``, which takes ``options``) and write the chart to
    ``path`` as PNG, SVG or PDF, chosen by its extension; an existing file only with
    ``force``. Returns the path."""
    from ..analysis.report import Report

    given = [reports] if isinstance(reports, Report) else reports
    if not isinstance(given, Sequence) or not given or not all(
            isinstance(r, Report) for r in given):
        raise PlotError(f"save_plot draws a Report or a list of them, got "
                        f"{type(reports).__name__}; a comparison, sweep or plan draws its own "
                        f"chart: save_chart(result.plot(), path)")
    check_plot_path(path, force)
    return save_chart(plot_roofline(reports, **options), path, force=force)


def save_chart(ax: Axes, path: str | Path, *, force: bool = False) -> Path:
    """Write the figure of ``ax`` to ``path`` (PNG, SVG or PDF by its extension; an existing
    file only with ``force``), atomically (``files.atomic``): a full disk leaves an existing
    chart as it was, never a partial one. The chart is drawn in memory first: matplotlib's PDF
    writer, its stream cut by a full disk, fails again in its own cleanup (a zlib error, not
    an OSError)."""
    if not hasattr(ax, "get_figure"):
        raise PlotError(f"save_chart writes a chart's Axes, got {type(ax).__name__} (a "
                        f"comparison's or sweep's: result.plot())")
    fmt = check_plot_path(path, force)
    buffer = io.BytesIO()
    figure_of(ax).savefig(buffer, format=fmt, bbox_inches="tight", dpi=110,
                          metadata=_SAVE_METADATA[fmt])
    try:  # without force, a file made since the check is still not replaced
        write_atomic(path, buffer.getvalue(), force=force)
    except FileExistsError:
        raise _exists(path) from None
    except OSError as exc:
        raise PlotError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    return Path(path)
