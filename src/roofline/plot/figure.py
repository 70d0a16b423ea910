"""Figures without pyplot: ``RooflineFigure`` (a ``matplotlib.figure.Figure`` that Jupyter shows
inline as PNG), new Axes laid out with room for a legend below, and the legend placement the
charts share. matplotlib is imported inside the functions."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..units import log_ticks
from .style import LABEL_SIZE

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure


@functools.cache
def figure_class() -> type[Figure]:
    """``RooflineFigure``, made on first use so that importing this module imports no
    matplotlib."""
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
    figure = figure_class()(figsize=figsize, dpi=100)
    return figure.add_axes((0.08, 0.3, 0.9, 0.62))


def _height_in(ax: Axes) -> float:
    """The Axes' height in inches."""
    return ax.get_position().height * figure_of(ax).get_figheight()


def figure_of(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn on (a chart here never lives on a SubFigure)."""
    return cast("Figure", ax.figure)


def label_log_axis(axis: Axis, text: Callable[[float], str]) -> None:
    """A log axis labelled at ``units.log_ticks`` over its limits as they are now (set them
    first), each label ``text(value)``, the minor ticks unlabelled. matplotlib labels decades,
    so an axis under one showed a single label ("1000") or labelled its minor ticks in
    scientific notation ("3x10^1", "2x10^0")."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    low, high = sorted(axis.get_view_interval())
    axis.set_major_locator(FixedLocator(log_ticks(low, high)))
    axis.set_major_formatter(FuncFormatter(lambda value, _pos: text(value)))
    axis.set_minor_formatter(NullFormatter())


def legend_below(ax: Axes, *others: Axes) -> None:
    """The legend in columns under the x-axis label, as wide as the Axes at most; with
    ``others`` (a twin Axes sharing its x axis), their entries too."""
    handles, names = ax.get_legend_handles_labels()
    for other in others:
        more, more_names = other.get_legend_handles_labels()
        handles, names = [*handles, *more], [*names, *more_names]
    first: dict[str, Artist] = {}  # one per name: the devices' predicted-time points share one
    for handle, name in zip(handles, names):
        first.setdefault(name, handle)
    handles, names = list(first.values()), list(first)
    ax.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, -0.55 / _height_in(ax)),
              ncol=2 if len(names) > 3 else len(names) or 1, fontsize=LABEL_SIZE - 1,
              frameon=False)


def below_axes(ax: Axes) -> dict[str, Any]:
    """Legend options that put it in one row under the x-axis label, clear of the title."""
    return dict(loc="upper center", bbox_to_anchor=(0.5, -0.62 / _height_in(ax)), ncol=2,
                fontsize=LABEL_SIZE + 1, frameon=False)
