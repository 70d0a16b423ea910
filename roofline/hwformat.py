"""Text and JSON views of hardware entries (``roofline hw list`` / ``hw show``). Display only."""

from __future__ import annotations

from .dtypes import DTYPES
from .format import to_json
from .hardware import HardwareSpec

_LIST_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "int8", "fp8")


def hardware_summary(spec: HardwareSpec) -> dict:
    """The fields ``hw list --format json`` promises (DESIGN.md), plus a few useful ones."""
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
    }


def hardware_list_json(specs: list[HardwareSpec]) -> str:
    return to_json([hardware_summary(s) for s in specs])


def hardware_json(spec: HardwareSpec) -> str:
    data = spec.to_dict()
    data["ridge"] = {dtype: spec.ridge(dtype) for dtype in spec.dtypes}
    return to_json(data) + "\n"


def hardware_table(specs: list[HardwareSpec]) -> str:
    """One line per entry: dense peak TFLOP/s per dtype ('-' where absent), bandwidth."""
    header = ["name", "kind", *_LIST_DTYPES, "GB/s"]
    rows = [header] + [
        [s.name, s.kind, *(_num(s.peak_tflops.get(d)) for d in _LIST_DTYPES),
         _num(s.bandwidth_gbs)]
        for s in specs
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines) + "\n(dense peaks in TFLOP/s, integer dtypes in TOPS; DRAM GB/s)\n"


def hardware_detail(spec: HardwareSpec) -> str:
    """Every figure of the entry, the ridge per dtype, its sources and notes."""
    lines = [f"{spec.name}: {spec.vendor} {spec.model} ({spec.architecture}, {spec.kind})",
             f"from: {spec.location or 'unknown'}; origin: {spec.origin}"]
    if spec.aliases:
        lines.append(f"aliases: {', '.join(spec.aliases)}")
    lines.append("")
    lines.append("dtype   peak TFLOP/s   ridge FLOP/B   alignment")
    for dtype in DTYPES:
        if dtype in spec.peak_tflops:
            rule = spec.alignment.get(dtype)
            align = f"x{rule.multiple} (best x{rule.preferred})" if rule else "-"
            lines.append(f"{dtype:<6}  {spec.peak_tflops[dtype]:>12g}   "
                         f"{spec.ridge(dtype):>12.1f}   {align}")
    lines.append(f"bandwidth: {spec.bandwidth_gbs:g} GB/s")
    for key, value in spec.raw.items():
        if key in _SHOWN:
            continue
        lines.append(f"{key}: {_flat(value)}")
    lines.append("")
    lines.append("sources:")
    for i, source in enumerate(spec.sources, 1):
        lines.append(f"  [{i}] {source.title}")
        lines.append(f"      {source.url or source.command}")
        lines.append(f"      covers: {', '.join(source.covers)}")
    lines += ["", "notes: " + " ".join(spec.notes.split())]
    return "\n".join(lines) + "\n"


_SHOWN = {"name", "kind", "vendor", "model", "architecture", "aliases", "peak_tflops",
          "bandwidth_gbs", "alignment", "sources", "notes", "origin"}


def _flat(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
