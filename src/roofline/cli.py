"""The ``roofline`` command: parses options, calls the library, prints what it returns.

Bad input (an unreadable or invalid file, an unknown hardware name or dtype) exits with status 2
and one line on stderr; no command prints a traceback for it.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import click

from . import __version__
from .dtypes import DTYPES
from .errors import RooflineError, one_line
from .fields import MAX_INT

FORMATS = ("table", "json", "csv", "markdown")


class BadInput(click.ClickException):
    """A RooflineError shown as ``Error: <message>`` with exit status 2."""

    exit_code = 2


class RooflineGroup(click.Group):
    """Turns every RooflineError raised by a command into BadInput, in one place, and prints
    each skipped user hardware file (a HwdbWarning) as one ``Warning:`` line on stderr."""

    def invoke(self, ctx: click.Context):
        from .database import HwdbWarning

        error = ""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", HwdbWarning)
            try:
                return super().invoke(ctx)
            except RooflineError as exc:
                error = str(exc)
                raise BadInput(one_line(error)) from None
            finally:
                for warning in caught:  # the file asked for is reported once, as the error
                    if not (error and str(warning.message).startswith(error)):
                        _print_warning(warning)


def _print_warning(warning: warnings.WarningMessage) -> None:
    from .database import HwdbWarning

    if issubclass(warning.category, HwdbWarning):
        click.echo(f"Warning: {one_line(str(warning.message))}", err=True)
    else:
        warnings.showwarning(warning.message, warning.category, warning.filename,
                             warning.lineno)


@click.group(cls=RooflineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="roofline")
def cli() -> None:
    """Roofline / GEMM-shape advisor.

    Lists the GEMMs of a network, says which are memory-bound on a device, which dimensions
    miss Tensor-Core alignment and what batch makes a layer compute-bound; measures what this
    machine delivers.

    \b
    Examples:
      roofline analyze examples/mlp-1024-4096-1000.yaml --hw a100-sxm4-80gb
      roofline analyze model.yaml --hw v100 --batch 1 --format json
      roofline hw list --kind gpu
      roofline probe --quick
    """


@cli.command()
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--hw", "hardware", multiple=True, required=True, metavar="NAME",
              help="Hardware entry name or alias (see `roofline hw list`), or a path to an "
                   "entry YAML file; `local` probes this machine once and reuses the result. "
                   "Repeat to compare devices.")
@click.option("--batch", type=click.IntRange(min=1, max=MAX_INT),
              help="Override the model's batch size (required when the file has none).")
@click.option("--dtype", type=click.Choice(DTYPES), help="Override the model's dtype.")
@click.option("--mode", type=click.Choice(("train", "inference")),
              help="train: forward and backward GEMMs (3n-1 for n layers); inference: forward.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format. json prints one object (a list of them with several --hw).")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Also draw the roofline chart to FILE (.png, .svg or .pdf).")
def analyze(model: Path, hardware: tuple[str, ...], batch: int | None, dtype: str | None,
            mode: str | None, fmt: str, plot: Path | None) -> None:
    """List every GEMM of MODEL (a model.yaml) with its FLOPs, bytes, intensity, bound,
    attainable throughput, time, alignment warnings and advice on the given hardware.

    Peaks are the dense datasheet figures of the hardware entry (or measured ones, for an
    entry saved by `roofline probe --save`).
    """
    from .api import analyze_model

    if plot is not None:
        from .plot import check_plot_path

        check_plot_path(plot)  # a bad extension fails before any analysis work
    from .probe import resolve_hardware

    reports = [analyze_model(model, resolve_hardware(hw, _progress), batch=batch, dtype=dtype,
                             mode=mode) for hw in hardware]
    if fmt == "json" and len(reports) == 1:
        _stream_json(reports[0])
    else:
        click.echo(_render_reports(reports, fmt), nl=False)
    if plot is not None:
        from .plot import save_plot

        save_plot(reports, plot)
        click.echo(f"wrote {plot}", err=True)


def _stream_json(report) -> None:
    """``report.to_dict()`` as JSON, its GEMMs converted and written one at a time: the same
    text as json_output.to_json, without 300,000 dicts and a 200 MB string in memory at once.
    The header keys come from to_dict itself (on a one-GEMM copy), so they cannot drift."""
    from dataclasses import replace

    from .json_output import write_json

    data = replace(report, results=report.results[:1]).to_dict()
    data["gemms"] = (result.to_dict() for result in report.results)
    data["totals"] = report.totals
    write_json(data, sys.stdout.write)  # sys.stdout: what click.echo and CliRunner use too
    sys.stdout.flush()


def _render_reports(reports: list, fmt: str) -> str:
    from .format import REPORT_FORMATS
    from .json_output import to_json

    if fmt == "json" and len(reports) > 1:
        return to_json([r.to_dict() for r in reports]) + "\n"
    if fmt == "csv":
        from .format import reports_csv

        return reports_csv(reports)
    text = [REPORT_FORMATS[fmt](r) for r in reports]
    return ("\n" if fmt != "json" else "").join(text) + ("\n" if fmt == "json" else "")


@cli.group()
def hw() -> None:
    """Browse the hardware database (bundled entries plus your own)."""


@hw.command("list")
@click.option("--kind", type=click.Choice(("gpu", "cpu")), help="Only GPUs or only CPUs.")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
def hw_list(kind: str | None, fmt: str) -> None:
    """List hardware entries with their headline figures (dense peaks)."""
    from .database import list_hardware, user_hwdb_dir
    from .hwformat import hardware_list_json, hardware_table

    specs = list_hardware(kind)
    if fmt == "json":
        click.echo(hardware_list_json(specs))
    else:
        click.echo(hardware_table(specs), nl=False)
        click.echo(f"\nuser entries: {user_hwdb_dir()} (set $ROOFLINE_HWDB to change)")


@hw.command("show")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
def hw_show(name: str, fmt: str) -> None:
    """Show every figure of one entry, its sources, and the ridge point per dtype."""
    from .database import load_hardware
    from .hwformat import hardware_detail, hardware_json

    spec = load_hardware(name)
    click.echo(hardware_json(spec) if fmt == "json" else hardware_detail(spec), nl=False)


def _progress(message: str) -> None:
    click.echo(message, err=True)


@cli.command()
@click.option("--quick", is_flag=True, help="A few seconds instead of about 20 (smaller sizes, "
                                            "fewer repeats).")
@click.option("--save", "save_name", metavar="NAME",
              help="Save the result as user hardware entry NAME, usable as `--hw NAME`.")
@click.option("--force", is_flag=True, help="With --save: replace an existing entry NAME.")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
@click.option("--preset", type=click.Choice(("full", "quick", "tiny")), hidden=True)
def probe(quick: bool, save_name: str | None, force: bool, fmt: str, preset: str | None) -> None:
    """Measure this machine (GEMM per dtype, DRAM and cache bandwidth, small-GEMM overhead,
    GPU figures when torch or cupy is installed) beside its theoretical peaks.

    Progress goes to stderr. `--hw local` in analyze runs `probe --quick --save local` once.
    """
    from .probe import run_probe, save_entry
    from .probe.entry import check_can_save
    from .probe.render import probe_json, probe_table

    if save_name is not None:  # checked before probing: an empty name is an error, not "no"
        check_can_save(save_name, force)
    result = run_probe(quick=quick, progress=_progress, preset=preset)
    click.echo(probe_json(result) if fmt == "json" else probe_table(result), nl=False)
    if save_name is not None:
        path = save_entry(result, save_name, force=force)
        click.echo(f"saved {save_name!r} to {path}; use it with --hw {save_name}", err=True)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="roofline")
