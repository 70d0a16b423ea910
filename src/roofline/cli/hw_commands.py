"""``roofline hw list`` and ``roofline hw show``: the hardware database browsed."""

from __future__ import annotations

import click

from .group import cli


@cli.group()
def hw() -> None:
    """Browse the hardware database (bundled entries plus your own)."""


@hw.command("list")
@click.option("--kind", type=click.Choice(("gpu", "cpu")), help="Only GPUs or only CPUs.")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
def hw_list(kind: str | None, fmt: str) -> None:
    """List hardware entries with their headline figures (dense peaks)."""
    from ..hardware.catalog import list_hardware, user_hwdb_dir
    from ..output.hardware import hardware_list_json, hardware_table

    specs = list_hardware(kind)
    if fmt == "json":
        click.echo(hardware_list_json(specs))
    else:
        click.echo(hardware_table(specs), nl=False)
        click.echo(f"\nuser entries: {user_hwdb_dir()} (set $ROOFLINE_HWDB to change)")


@hw.command("show", short_help="Every figure of one entry, its sources and ridge points.")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
def hw_show(name: str, fmt: str) -> None:
    """Show every figure of one entry, its sources, and the ridge point per dtype."""
    from ..hardware.catalog import load_hardware
    from ..output.hardware import hardware_detail, hardware_json

    spec = load_hardware(name)
    click.echo(hardware_json(spec) if fmt == "json" else hardware_detail(spec), nl=False)
