"""``roofline probe``: what this machine delivers, measured, and saved as a user entry."""

from __future__ import annotations

import click

from ..errors import InputError
from .console import _progress, _render
from .group import cli


@cli.command(short_help="Measure what this machine delivers: GEMMs, memory, caches.")
@click.option("--quick", is_flag=True, help="About 10-30 s (longer on a busy machine) "
                                            "instead of about a minute on 2 cores "
                                            "(smaller sizes, fewer repeats and rounds).")
@click.option("--save", "save_name", metavar="NAME",
              help="Save the result as user hardware entry NAME, usable as `--hw NAME`.")
@click.option("--force", is_flag=True, help="With --save: replace an existing entry NAME, and "
                                            "save a result the probe's own checks call "
                                            "unstable (fp32 slower than fp64, an efficiency "
                                            "above 1.05, a spread above 25%, other "
                                            "programs keeping over 0.25 CPUs busy).")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "html")), default="table",
              show_default=True)
@click.option("--library", type=click.Choice(("numpy", "torch")), default="numpy",
              show_default=True,
              help="What the CPU GEMMs, and so the calibration of predicted times, go through: "
                   "numpy's BLAS, or torch (its MKL / oneDNN / OpenBLAS), for models that run "
                   "in torch.")
@click.option("--preset", type=click.Choice(("full", "quick", "tiny")), hidden=True)
def probe(quick: bool, save_name: str | None, force: bool, fmt: str, library: str,
          preset: str | None) -> None:
    """Measure this machine (GEMM per dtype, DRAM and cache bandwidth, small-GEMM overhead,
    GPU figures when torch or cupy is installed) beside its theoretical peaks.

    Progress goes to stderr. `--hw local` in analyze runs `probe --quick --save local` once
    (with `--library torch` for a captured PyTorch model).
    """
    from ..output.probe import PROBE_FORMATS
    from ..probe import run_probe, save_entry
    from ..probe.entry import check_can_save
    from ..probe.runner import check_library

    check_library(library)  # before anything is timed, or a name checked
    if force and save_name is None:
        raise InputError("force", "", "goes with --save (it lets the result replace an entry "
                                      "or be saved though unstable)")
    if save_name is not None:  # checked before probing: an empty name is an error, not "no"
        check_can_save(save_name, force)
    result = run_probe(quick=quick, progress=_progress, preset=preset, library=library)
    click.echo(_render(PROBE_FORMATS, fmt, result), nl=False)
    if save_name is not None:
        path = save_entry(result, save_name, force=force)
        click.echo(f"saved {save_name!r} to {path}; use it with --hw {save_name}", err=True)
