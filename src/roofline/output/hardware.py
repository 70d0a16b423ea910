"""Text and JSON views of hardware entries (``roofline hw list`` / ``hw show``). Display only."""

from __future__ import annotations

import textwrap

from ..hardware.spec import Calibration, HardwareSpec
from ..model.dtypes import DTYPES
from ..units import rate_unit, si
from .json import to_json
from .table import aligned
from .times import forced_warning

#: How a sentence names where a device's memory capacity comes from
#: (``HardwareSpec.memory_capacity_basis``): ``{}`` is the capacity.
_CAPACITY = {"cuda": "the {} CUDA reports", "probe": "the {} the probe read",
             "datasheet": "the datasheet's {}"}


def capacity_text(capacity_bytes: float, basis: str | None) -> str:
    """``the 85 GB CUDA reports``, ``the datasheet's 80 GB``: a capacity in bytes with its basis
    (the capacity alone where the basis is unknown)."""
    capacity = si(capacity_bytes, "B")
    return _CAPACITY[basis].format(capacity) if basis in _CAPACITY else capacity


def hardware_summary(spec: HardwareSpec) -> dict:
    """The fields ``hw list --format json`` promises (docs/design.md), plus a few useful ones."""
    return {
        "name": spec.name,
        "kind": spec.kind,
        "vendor": spec.vendor,
        "model": spec.model,
        "architecture": spec.architecture,
        "aliases": list(spec.aliases),
        "peak_tflops": dict(spec.peak_tflops),
        "bandwidth_gbs": spec.bandwidth_gbs,
        "ridge": {dtype: spec.ridge(dtype) for dtype in spec.dtypes},
        "origin": spec.origin,
        "location": spec.location,
        "overrides": list(spec.overrides),
    }


def hardware_list_json(specs: list[HardwareSpec]) -> str:
    return to_json([hardware_summary(s) for s in specs])


def hardware_json(spec: HardwareSpec) -> str:
    data = spec.to_dict()
    if spec.overrides:
        data["overrides"] = list(spec.overrides)
    data["ridge"] = {dtype: spec.ridge(dtype) for dtype in spec.dtypes}
    return to_json(data) + "\n"


def hardware_table(specs: list[HardwareSpec]) -> str:
    """One line per entry: dense peak TFLOP/s per dtype ('-' where absent), bandwidth."""
    header = ["name", "kind", *DTYPES, "GB/s"]
    rows = [[s.name + ("*" if s.overrides else "+" if _yours(s) else ""), s.kind,
             *(_num(s.peak_tflops.get(d)) for d in DTYPES), _num(s.bandwidth_gbs)]
            for s in specs]
    lines = aligned(header, rows, {0, 1})
    if any(_yours(s) and not s.overrides for s in specs):
        lines.append("+ a user entry (your own file: a probe's --save, or one you wrote)")
    if any(s.overrides for s in specs):
        lines.append("* a user entry that overrides a bundled name or alias (hw show NAME)")
    return "\n".join(lines) + "\n(dense peaks in TFLOP/s, integer dtypes in TOPS; DRAM GB/s)\n"


def _yours(spec: HardwareSpec) -> bool:
    """Whether ``spec`` is a user's file, not an entry bundled with roofline."""
    return spec.location not in (None, "", "bundled")


def _peak_lines(spec: HardwareSpec) -> list[str]:
    """The peak, ridge and alignment of each dtype; an integer dtype's peak said to be in TOPS,
    as ``hw list``'s footnote says (the same 10^12 scale, named as vendors quote it)."""
    lines = ["dtype   peak TFLOP/s   ridge FLOP/B   alignment"]
    for dtype in DTYPES:
        if dtype in spec.peak_tflops:
            rule = spec.alignment.get(dtype)
            align = f"x{rule.multiple} (best x{rule.preferred})" if rule else "-"
            lines.append(f"{dtype:<6}  {spec.peak_tflops[dtype]:>12g}   "
                         f"{spec.ridge(dtype):>12.1f}   {align}")
    integer = [dtype for dtype in DTYPES
               if dtype in spec.peak_tflops and rate_unit(dtype) == "TOPS"]
    return lines + ([f"({', '.join(integer)} peak in TOPS)"] if integer else [])


def hardware_detail(spec: HardwareSpec) -> str:
    """Every figure of the entry, the ridge per dtype, its sources and notes; an entry saved
    past the probe's own checks warned of as analyze warns of it (``times.forced_warning``)."""
    lines = [f"{spec.name}: {spec.product} ({spec.architecture}, {spec.kind})",
             f"from: {spec.location or 'unknown'}; origin: {spec.origin}"]
    if spec.aliases:
        lines.append(f"aliases: {', '.join(spec.aliases)}")
    if spec.overrides:
        lines.append(f"overrides the bundled {', '.join(spec.overrides)}: this user entry is "
                     f"used in its place")
    forced = forced_warning(spec)
    if forced:
        lines += textwrap.wrap(f"warning: {forced}", width=100, subsequent_indent="  ")
    lines.append("")
    lines += _peak_lines(spec)
    lines.append(f"bandwidth: {spec.bandwidth_gbs:g} GB/s")
    if spec.cpu is not None:
        lines += _cpu_clock_lines(spec)
    for key, value in spec.to_dict().items():
        if key in _SHOWN or (key == "cpu" and spec.cpu is not None):
            continue
        if key == "calibration" and spec.calibration is not None:
            lines.append(_calibration_line(spec.calibration))  # too long for a flat line
            continue
        lines.append(f"{key}: {flat(value)}" + (" (MiB)" if key == "llc_mb" else ""))
    lines.append("")
    lines.append("sources:")
    for i, source in enumerate(spec.sources, 1):
        lines.append(f"  [{i}] {source.title}")
        lines.append(f"      {source.url or source.command}")
        lines.append(f"      covers: {', '.join(source.covers)}")
    lines += ["", *textwrap.wrap("notes: " + " ".join(spec.notes.split()), width=100)]
    return "\n".join(lines) + "\n"


def _calibration_line(cal: Calibration) -> str:
    """A probe's calibration block in a line: its version, the library it was timed through
    (``Calibration.through``), what it holds; the whole block is in the entry's file."""
    through = cal.through.words if cal.through is not None else "a library not recorded"
    holds = [f"GEMMs in {', '.join(cal.efficiency)}"] if cal.efficiency else []
    if cal.gpu_ops is not None:
        holds.append("GPU kernel constants timed in a CUDA graph" if cal.gpu_ops.timing ==
                     "graph" else "GPU kernel constants timed from Python (the host's time in "
                                  "them)")
    if cal.cpu_ops is not None:
        holds.append("op costs")
    return (f"calibration: version {cal.version}, through {through}: {', '.join(holds)} (the "
            f"whole block: --format json, or the entry's file)")


def _cpu_clock_lines(spec: HardwareSpec) -> list[str]:
    """The clock each dtype's peak assumes, the counts it multiplies, every clock figure known."""
    cpu = spec.cpu
    if cpu is None:  # only CPU entries come here
        return []
    lines = [f"cpu: {cpu.sockets} socket(s) x {cpu.cores_per_socket} cores, {cpu.simd_bits}-bit "
             f"SIMD, {cpu.fma_units} FMA units per core"
             + (f", AMX {flat(cpu.amx_ops_per_cycle)} ops/cycle/core"
                if cpu.amx_ops_per_cycle else ""), "peak clocks:"]
    groups: dict[str, list[str]] = {}
    for dtype in spec.dtypes:
        groups.setdefault(cpu.unit_for(dtype), []).append(dtype)
    vector_only = [d for d in spec.vector_tflops if cpu.unit_for(d) == "amx"]
    for unit, dtypes in groups.items():
        lines.append(f"  {', '.join(dtypes)} ({unit}): {cpu.clock_label(unit)}")
    if vector_only:
        lines.append(f"  vector_tflops {', '.join(vector_only)} (vector): "
                     f"{cpu.clock_label('vector')}")
    for isa, kinds in cpu.clocks.items():
        for kind, clock in kinds.items():
            bound = f" ({clock.bound} bound)" if clock.bound else ""
            text = (f"clock {isa} {kind}: {clock.ghz:g} GHz{bound} [{clock.tag}] "
                    f"{' '.join(clock.source.split())}")
            lines += textwrap.wrap(text, width=100, subsequent_indent="    ",
                                   break_on_hyphens=False)
    return lines


_SHOWN = {"name", "kind", "vendor", "model", "architecture", "aliases", "peak_tflops",
          "bandwidth_gbs", "alignment", "sources", "notes", "origin", "location"}


def flat(value) -> str:
    """An entry field's value in one line (``hw show``, the HTML sources table)."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(flat(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


README_START = "<!-- hwdb-table:start (generated by tools/update_readme.py; do not edit) -->"
README_END = "<!-- hwdb-table:end -->"


def hardware_markdown_table(specs: list[HardwareSpec]) -> str:
    """The README's table of bundled devices: dense peaks, bandwidth, main ridge point."""
    lines = ["| name | device | fp64 | fp32 | tf32 | fp16 | bf16 | int8 | fp8 | GB/s | ridge |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for s in specs:
        main = "fp16" if "fp16" in s.peak_tflops else "fp32"
        cells = [f"`{s.name}`", s.product,
                 *(_num(s.peak_tflops.get(d)) for d in DTYPES),
                 _num(s.bandwidth_gbs), f"{s.ridge(main):.0f} ({main})"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([README_START, *lines, README_END])
