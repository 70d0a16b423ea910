"""``compare`` and ``sweep`` results as table, JSON, CSV and Markdown (display only)."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from ..units import seconds, si
from .json import to_json
from .report import LAYER_WIDTH, compact_names, precision_text

if TYPE_CHECKING:
    from ..analysis.whatif import Comparison, Sweep


def _grid(rows: list[list[str]], left: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i in left else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return lines


def _markdown(rows: list[list[str]], left: set[int]) -> list[str]:
    out = ["| " + " | ".join(rows[0]) + " |",
           "|" + "|".join("---" if i in left else "--:" for i in range(len(rows[0]))) + "|"]
    return out + ["| " + " | ".join(row) + " |" for row in rows[1:]]


# ------------------------------------------------------------------------------------- compare

def _compare_header(c: Comparison) -> list[str]:
    net = c.baseline.network
    lines = [f"{net.name}: batch {net.batch}, {net.mode}; baseline {c.baseline.hardware.name}",
             f"precision: {precision_text(net)}"]
    if c.baseline.quantization:
        lines.append("quantization: on (compute-bound GEMM times divided by the tile/wave "
                     "efficiency)")
    return lines + [f"note: {c.dtype_note(r)}" for r in c.reports if c.dtype_note(r)]


def _device_rows(c: Comparison) -> list[list[str]]:
    rows = [["hardware", "dtype", "ridge", "step time", "speedup", "memory-bound time"]]
    for r in c.reports:
        t = r.totals
        rows.append([r.hardware.name, r.dtype, f"{r.ridge:.1f}", seconds(t["time_s"]),
                     f"{c.speedup(r):.2f}x", f"{t['memory_bound_time_fraction']:.0%}"])
    return rows


def _gemm_rows(c: Comparison) -> list[list[str]]:
    short = [r.hardware.name for r in c.reports]
    rows = [["GEMM", "layer", "M", "N", "K", *short]]
    for i, result in enumerate(c.baseline.results):
        g = result.gemm
        if g.copy:  # a repeated block's rows are shown once (the totals count every copy)
            continue
        cells = []
        for r in c.reports:
            other = r.results[i]
            cell = f"{seconds(other.time_s)} {other.bound[0]}"
            if r is not c.baseline:
                cell += f" {result.time_s / other.time_s:.2f}x"
            cells.append(cell)
        rows.append([g.name, g.layer[:LAYER_WIDTH], str(g.m), str(g.n), str(g.k), *cells])
    return rows


def _why_lines(c: Comparison) -> list[str]:
    """Per device, the GEMMs grouped by why they gain or lose."""
    lines = []
    for r in c.reports[1:]:
        groups: dict[str, list[str]] = {}
        for i, result in enumerate(c.baseline.results):
            groups.setdefault(c.why(i, r), []).append(result.gemm.name)
        lines.append(f"{r.hardware.name} vs {c.baseline.hardware.name}:")
        lines += [f"  {compact_names(names, 8)}: {why}" for why, names in groups.items()]
    return lines


def comparison_table(c: Comparison) -> str:
    """Devices (step time, speedup), then per GEMM ``time bound speedup`` on each device
    (m / c: memory- or compute-bound), why, and the verdict."""
    out = [*_compare_header(c), "", *_grid(_device_rows(c), {0, 1}), "",
           *_grid(_gemm_rows(c), {0, 1}),
           "(per device: time, m/c = memory/compute-bound, speedup over the baseline)", "",
           *_why_lines(c), "", f"verdict: {c.verdict()}"]
    return "\n".join(out) + "\n"


def comparison_markdown(c: Comparison) -> str:
    out = ["  \n".join(_compare_header(c)), "", *_markdown(_device_rows(c), {0, 1}), "",
           *_markdown(_gemm_rows(c), {0, 1}), "",
           *(f"- {line.strip()}" for line in _why_lines(c)), "", f"**{c.verdict()}**"]
    return "\n".join(out) + "\n"


def comparison_csv(c: Comparison) -> str:
    """One row per (GEMM, device): raw seconds, speedup over the baseline, bound, why."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["name", "layer", "pass", "hardware", "dtype", "time_s", "speedup", "bound",
                     "why"])
    for i, base in enumerate(c.baseline.results):
        for r in c.reports:
            other = r.results[i]
            why = "" if r is c.baseline else c.why(i, r)
            writer.writerow([base.gemm.name, base.gemm.layer, base.gemm.pass_, r.hardware.name,
                             r.dtype, other.time_s, base.time_s / other.time_s, other.bound, why])
    return buffer.getvalue()


COMPARE_FORMATS = {"table": comparison_table, "markdown": comparison_markdown,
                   "csv": comparison_csv, "json": lambda c: to_json(c.to_dict()) + "\n"}


# --------------------------------------------------------------------------------------- sweep

def _sweep_header(s: Sweep) -> list[str]:
    first = s.reports[0]
    lines = [f"{first.network.name} on {s.hardware.name}: {first.dtype}, {first.network.mode}",
             f"precision: {precision_text(first.network)}",
             f"ridge {first.ridge:.1f} FLOP/B"]
    if first.quantization:
        lines.append("quantization: on (compute-bound GEMM times divided by the tile/wave "
                     "efficiency)")
    return lines


def _sweep_rows(s: Sweep) -> list[list[str]]:
    rows = [["batch", "step time", "samples/s", "memory-bound time", "memory-bound GEMMs"]]
    for r in s.reports:
        t = r.totals
        memory = [x.gemm.name for x in r.results if x.bound == "memory"]
        rows.append([str(r.network.batch), seconds(t["time_s"]),
                     si(r.batch / t["time_s"], ""),
                     f"{t['memory_bound_time_fraction']:.0%}",
                     compact_names(memory, 6) if len(memory) < len(r.results) else "all"])
        rows[-1][4] = rows[-1][4] or "none"
    return rows


def _transition_lines(s: Sweep) -> list[str]:
    groups: dict[int | None, list[str]] = {}
    for name, batch in s.transitions().items():
        groups.setdefault(batch, []).append(name)
    order = sorted(groups, key=lambda b: (b is None, b or 0))
    return [f"  {'never' if b is None else f'batch >= {b}'}: {compact_names(groups[b], 8)}"
            for b in order]


def sweep_table(s: Sweep) -> str:
    """One row per batch (step time, samples/s, memory-bound share and GEMMs), then the batch
    at which each GEMM turns compute-bound."""
    out = [*_sweep_header(s), "", *_grid(_sweep_rows(s), {4}), "",
           "compute-bound from (closed form, any batch):", *_transition_lines(s)]
    return "\n".join(out) + "\n"


def sweep_markdown(s: Sweep) -> str:
    out = ["  \n".join(_sweep_header(s)), "", *_markdown(_sweep_rows(s), {4}), "",
           "Compute-bound from (closed form, any batch):", "",
           *(f"- {line.strip()}" for line in _transition_lines(s))]
    return "\n".join(out) + "\n"


def sweep_csv(s: Sweep) -> str:
    """One row per (batch, GEMM), raw numbers; the step's totals repeated on each row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["batch", "name", "intensity", "bound", "time_s", "step_time_s",
                     "samples_per_s", "memory_bound_time_fraction", "compute_bound_from"])
    transitions = s.transitions()
    for r in s.reports:
        t = r.totals
        for x in r.results:
            writer.writerow([r.network.batch, x.gemm.name, x.gemm.intensity, x.bound, x.time_s,
                             t["time_s"], r.batch / t["time_s"],
                             t["memory_bound_time_fraction"],
                             "" if transitions[x.gemm.name] is None
                             else transitions[x.gemm.name]])
    return buffer.getvalue()


SWEEP_FORMATS = {"table": sweep_table, "markdown": sweep_markdown, "csv": sweep_csv,
                 "json": lambda s: to_json(s.to_dict()) + "\n"}
