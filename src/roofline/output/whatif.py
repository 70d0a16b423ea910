"""``compare`` and ``sweep`` results as table, JSON, CSV and Markdown (display only); their
HTML pages are ``output.html.whatif``'s."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from ..units import seconds, si
from .json import to_json
from .report import LAYER_WIDTH, compact_names, precision_text, quantization_line, step_text
from .table import aligned, markdown

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.whatif import Comparison, GemmChange, Sweep


#: What ``roofline gemm`` prints under its table: how it reads a bare shape
#: (``analysis.whatif.gemm_network``).
GEMM_NOTE = ("M is read as the batch: the shape is the forward GEMM of a linear layer with K "
             "inputs and N outputs\n(C(M, N) = A(M, K) . B(K, N)), so batch advice is about M.")


def _split(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """``(header, body)`` of rows whose first row is the header."""
    return rows[0], rows[1:]


# ------------------------------------------------------------------------------------- compare

def dtype_note(c: Comparison, report: Report) -> str | None:
    """Why a device runs another dtype than the model's, or None."""
    if not c.substituted(report):
        return None
    return (f"{report.hardware.name} has no {c.requested_dtype} peak: runs "
            f"{report.dtype}, the nearest it has")


def change_text(change: GemmChange, baseline: str) -> str:
    """Why one GEMM gains or loses on a device (``Comparison.why``), as a clause."""
    if change.kind == "memory":
        text = (f"memory-bound on both: the bandwidth ratio {change.other:g}/{change.base:g} = "
                f"{change.other / change.base:.2f}x")
        if change.bytes_ratio != 1.0:
            text += f", moving {change.bytes_ratio:.2g}x the bytes"
        return text
    if change.kind == "compute":
        return (f"compute-bound on both: the peak ratio {change.other:g}/{change.base:g} = "
                f"{change.other / change.base:.2f}x")
    relation = ">=" if change.bound == "compute" else "<"
    return (f"turns {change.bound}-bound (intensity {change.intensity:.1f} {relation} "
            f"ridge {change.ridge:.1f}; {change.base_bound}-bound on {baseline})")


def _decider(report: Report, base: Report) -> str:
    """What sets ``report``'s step against the baseline's: bandwidth or the dtype's peak."""
    fraction = report.totals["memory_bound_time_fraction"]
    hw, b_hw = report.hardware, base.hardware
    if fraction >= 0.5:
        return (f"{fraction:.0%} of its step is memory-bound, so bandwidth decides "
                f"({hw.bandwidth_gbs:g} vs {b_hw.bandwidth_gbs:g} GB/s)")
    peak, b_peak = hw.peak_tflops[report.dtype], b_hw.peak_tflops[base.dtype]
    return (f"{1 - fraction:.0%} of its step is compute-bound, so the {report.dtype} "
            f"peak decides ({peak:g} vs {b_peak:g} TFLOP/s)")


def verdict_text(c: Comparison) -> str:
    """One plain sentence: who is fastest, by how much, what decides it, and who is slowest
    (the baseline included)."""
    base, fastest, slowest = c.baseline, c.fastest, c.slowest
    if fastest is base:
        best = min(c.reports[1:], key=lambda r: r.totals["time_s"])
        text = (f"{base.hardware.name} (the baseline) stays fastest at "
                f"{seconds(base.totals['time_s'])} per step; the next, {best.hardware.name}, "
                f"is {1 / c.speedup(best):.2f}x slower than it: {_decider(best, base)}")
    else:
        text = (f"{fastest.hardware.name} is the fastest: {seconds(fastest.totals['time_s'])} "
                f"per step, {c.speedup(fastest):.2f}x faster than {base.hardware.name}; "
                f"{_decider(fastest, base)}")
    if len(c.reports) > 2 and slowest is base:
        text += f"; the baseline, {base.hardware.name}, is the slowest"
    elif len(c.reports) > 2:
        text += f"; the slowest, {slowest.hardware.name}, runs at {c.speedup(slowest):.2f}x"
    return text + "."


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The compare JSON contract: ``Comparison.to_dict``'s numbers with the sentences."""
    data = c.to_dict()
    for device, report in zip(data["devices"], c.reports):
        device["dtype_note"] = dtype_note(c, report)
    baseline = c.baseline.hardware.name
    for index, row in enumerate(data["gemms"]):
        row["why"] = {r.hardware.name: change_text(c.why(index, r), baseline)
                      for r in c.reports[1:]}
    data["verdict"] = verdict_text(c)
    return data


def _compare_header(c: Comparison) -> list[str]:
    net = c.baseline.network
    lines = [f"{net.name}: {step_text(net)}; baseline {c.baseline.hardware.name}",
             f"precision: {precision_text(net)}"]
    if c.baseline.quantization:
        lines.append(quantization_line(detail=False))
    notes = (dtype_note(c, r) for r in c.reports)
    return lines + [f"note: {note}" for note in notes if note]


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
            why = change_text(c.why(i, r), c.baseline.hardware.name)
            groups.setdefault(why, []).append(result.gemm.name)
        lines.append(f"{r.hardware.name} vs {c.baseline.hardware.name}:")
        lines += [f"  {compact_names(names, 8)}: {why}" for why, names in groups.items()]
    return lines


def comparison_table(c: Comparison) -> str:
    """Devices (step time, speedup), then per GEMM ``time bound speedup`` on each device
    (m / c: memory- or compute-bound), why, and the verdict."""
    out = [*_compare_header(c), "", *aligned(*_split(_device_rows(c)), {0, 1}), "",
           *aligned(*_split(_gemm_rows(c)), {0, 1}),
           "(per device: time, m/c = memory/compute-bound, speedup over the baseline)", "",
           *_why_lines(c), "", f"verdict: {verdict_text(c)}"]
    return "\n".join(out) + "\n"


def comparison_markdown(c: Comparison) -> str:
    out = ["  \n".join(_compare_header(c)), "", *markdown(*_split(_device_rows(c)), {0, 1}), "",
           *markdown(*_split(_gemm_rows(c)), {0, 1}), "",
           *(f"- {line.strip()}" for line in _why_lines(c)), "", f"**{verdict_text(c)}**"]
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
            why = ("" if r is c.baseline
                   else change_text(c.why(i, r), c.baseline.hardware.name))
            writer.writerow([base.gemm.name, base.gemm.layer, base.gemm.pass_, r.hardware.name,
                             r.dtype, other.time_s, base.time_s / other.time_s, other.bound, why])
    return buffer.getvalue()


def comparison_html(c: Comparison, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.comparison_page``)."""
    from .html import comparison_page

    return comparison_page(c, command)


COMPARE_FORMATS = {"table": comparison_table, "markdown": comparison_markdown,
                   "csv": comparison_csv, "json": lambda c: to_json(comparison_dict(c)) + "\n",
                   "html": comparison_html}


# --------------------------------------------------------------------------------------- sweep

def fit_text(max_batch: int | None, seq: int | None) -> str | None:
    """The largest batch that fits in memory, in words (None: no capacity stated)."""
    if max_batch is None:
        return None
    at = f" at seq {seq}" if seq is not None else ""
    return (f"batch <= {max_batch} fits in memory{at}" if max_batch else
            f"no batch fits in memory{at}")


def no_fit_label(max_batch: int) -> str:
    """A sweep chart's label for the batches whose step does not fit in memory."""
    return f"does not fit in memory (batch > {max_batch})"


def _sweep_header(s: Sweep) -> list[str]:
    first = s.reports[0]
    lines = [f"{first.network.name} on {s.hardware.name}: {first.dtype}, {first.network.mode}",
             f"precision: {precision_text(first.network)}",
             f"ridge {first.ridge:.1f} FLOP/B"]
    if first.quantization:
        lines.append(quantization_line(detail=False))
    fit = fit_text(s.max_batch, first.network.seq)
    if fit is not None and first.memory and first.memory.capacity_bytes is not None:
        lines.append(f"memory: {fit} ({si(first.memory.capacity_bytes, 'B')}); larger "
                     f"batches are marked 'does not fit'")
    return lines


def _memory_cell(r: Report) -> str:
    memory = r.memory
    if memory is None:
        return ""
    text = si(memory.total_bytes, "B")
    return text + (": does not fit" if memory.fits is False else "")


def _sweep_rows(s: Sweep) -> list[list[str]]:
    rows = [["batch", "step time", "samples/s", "memory", "memory-bound time",
             "memory-bound GEMMs"]]
    for r in s.reports:
        t = r.totals
        memory = [x.gemm.name for x in r.results if x.bound == "memory"]
        rows.append([str(r.network.batch), seconds(t["time_s"]),
                     si(r.batch / t["time_s"], ""), _memory_cell(r),
                     f"{t['memory_bound_time_fraction']:.0%}",
                     compact_names(memory, 6) if len(memory) < len(r.results) else "all"])
        rows[-1][5] = rows[-1][5] or "none"
    return rows


def _transition_lines(s: Sweep) -> list[str]:
    groups: dict[int | None, list[str]] = {}
    for name, batch in s.transitions().items():
        groups.setdefault(batch, []).append(name)
    order = sorted(groups, key=lambda b: (b is None, b or 0))
    limit = s.max_batch

    def mark(b: int | None) -> str:
        return (f" (does not fit in memory: at most batch {limit})"
                if b is not None and limit is not None and b > limit else "")

    return [f"  {'never' if b is None else f'batch >= {b}'}: {compact_names(groups[b], 8)}"
            f"{mark(b)}" for b in order]


def sweep_table(s: Sweep) -> str:
    """One row per batch (step time, samples/s, memory-bound share and GEMMs), then the batch
    at which each GEMM turns compute-bound."""
    out = [*_sweep_header(s), "", *aligned(*_split(_sweep_rows(s)), {3, 5}), "",
           "compute-bound from (closed form, any batch):", *_transition_lines(s)]
    return "\n".join(out) + "\n"


def sweep_markdown(s: Sweep) -> str:
    out = ["  \n".join(_sweep_header(s)), "", *markdown(*_split(_sweep_rows(s)), {3, 5}), "",
           "Compute-bound from (closed form, any batch):", "",
           *(f"- {line.strip()}" for line in _transition_lines(s))]
    return "\n".join(out) + "\n"


def sweep_csv(s: Sweep) -> str:
    """One row per (batch, GEMM), raw numbers; the step's totals repeated on each row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["batch", "name", "intensity", "bound", "time_s", "step_time_s",
                     "samples_per_s", "memory_bound_time_fraction", "compute_bound_from",
                     "memory_bytes", "fits"])
    transitions = s.transitions()
    for r in s.reports:
        t = r.totals
        for x in r.results:
            writer.writerow([r.network.batch, x.gemm.name, x.gemm.intensity, x.bound, x.time_s,
                             t["time_s"], r.batch / t["time_s"],
                             t["memory_bound_time_fraction"],
                             "" if transitions[x.gemm.name] is None
                             else transitions[x.gemm.name],
                             r.memory.total_bytes if r.memory else "",
                             "" if r.memory is None or r.memory.fits is None
                             else r.memory.fits])
    return buffer.getvalue()


def sweep_html(s: Sweep, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.sweep_page``)."""
    from .html import sweep_page

    return sweep_page(s, command)


SWEEP_FORMATS = {"table": sweep_table, "markdown": sweep_markdown, "csv": sweep_csv,
                 "json": lambda s: to_json(s.to_dict()) + "\n", "html": sweep_html}
