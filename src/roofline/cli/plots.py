"""``--plot FILE`` and its ``--force``: the path checked before any work, the chart drawn and
written after the report."""

from __future__ import annotations

import click


def _write_plot(plot: str | None, draw) -> None:
    """When ``--plot`` was given, ``draw(roofline.plot)`` draws the chart (an Axes) and it is
    written to the file (replacing one only with --force); says so as it starts (matplotlib's
    import and drawing take 2-3 s here, after the report is out) and where it wrote."""
    if plot is not None:
        from .. import plot as charts

        click.echo(f"drawing {plot} ...", err=True)
        charts.save_chart(draw(charts), plot, force=_forced())
        click.echo(f"wrote {plot}", err=True)


_FORCE = "roofline.force"
#: ``--force`` of a command that writes a chart: its value goes to ``_check_plot`` and
#: ``_write_plot`` through the context, the command's own arguments untouched.
force_option = click.option(
    "--force", is_flag=True, expose_value=False,
    callback=lambda ctx, param, value: ctx.meta.__setitem__(_FORCE, value),
    help="Replace an existing --plot FILE (without it, an existing file stops the run before "
         "any work, the file as it was).")


def _forced() -> bool:
    return bool(click.get_current_context().meta.get(_FORCE))


def _check_plot(plot: str | None) -> None:
    if plot is not None:
        from ..plot import check_plot_path

        check_plot_path(plot, _forced())  # a bad path fails before any analysis work
