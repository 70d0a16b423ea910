"""Rendering a ProbeResult: a readable table for people, JSON for programs. Display only."""

from __future__ import annotations

from ..hardware.spec import CalibrationLibrary
from ..model.dtypes import DTYPES
from ..units import count, three_digits
from .json import to_json
from .probe_notes import note_text


def probe_json(result) -> str:
    return to_json(result.to_dict()) + "\n"


def _ratio(measured: float | None, theory: float | None) -> str:
    if not measured or not theory:
        return ""
    return f"{measured / theory:.0%} of {theory:,.1f}"


def _gemm_lines(measured: dict, theory: dict, label: str) -> list[str]:
    lines = []
    for dtype in DTYPES:
        if dtype in measured or dtype in theory:
            got, peak = measured.get(dtype), theory.get(dtype)
            shown = f"{got:10,.1f}" if got else f"{'-':>10}"
            versus = (_ratio(got, peak) if got else
                      f"not measured; theoretical {peak:,.1f}" if peak else "not measured")
            lines.append(f"  {label} {dtype:<5} {shown} GFLOP/s   {versus}".rstrip())
    return lines


def _bandwidth_lines(measured: dict, theory: dict, keys) -> list[str]:
    lines = []
    for key in keys:
        if key in measured:
            lines.append(f"  {key:<16} {measured[key]:10,.1f} GB/s      "
                         f"{_ratio(measured[key], theory.get(key))}".rstrip())
    return lines


def _op_cost_lines(ops: dict | None) -> list[str]:
    """The op costs (calibration ``ops``): the call, each class's rate, attention's share."""
    if not ops:
        return []
    lines = [f"  op costs ({ops['library']}, {count(ops['threads'], 'thread')}, {ops['dtype']}): "
             f"{ops['call_s'] * 1e6:.2f} us a call"]
    lines += [f"    {key:<16} {three_digits(rate):>8} GB/s"
              for key, rate in ops["rates_gbs"].items()]
    for key in ("attention", "attention_causal"):
        if ops.get(key):
            shares = ", ".join(f"s={seq} {share:.0%}" for seq, share in ops[key].items())
            lines.append(f"    {key:<16} {shares} of the {ops['dtype']} peak")
    return lines


def probe_table(result) -> str:
    """Identity, measured vs theoretical figures, what was not measured, and warnings."""
    cpu, m, t = result.cpu, result.measured, result.theoretical
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('num_threads')} "
                     f"threads)" for b in result.blas) or "unknown"
    match = f" = hwdb {result.cpu_match}" if result.cpu_match else " (no hwdb match)"
    clock = result.details.get("effective_clock_ghz")
    peak = result.cpu_peak
    clocks = (f", {clock:.2f} GHz measured under load" if clock else "") + (
        f", peaks at {peak.clock_ghz:.2f} GHz" if peak else "")
    out = [f"CPU   {cpu.brand}{match}: {cpu.sockets} socket(s), {cpu.cores} cores "
           f"({cpu.usable_cpus} usable CPUs){clocks}",
           f"ISA   {' '.join(cpu.isa) or 'no AVX'}",
           f"BLAS  {blas}"]
    if result.library:
        out.append(f"GEMM  through {CalibrationLibrary(**result.library).words} (the peaks, "
                   f"small-GEMM call and calibration)")
    out += [f"GPU   {g['index']}: {g['name']}" for g in result.gpus]
    out += ["", f"measured ({result.preset} preset)      vs theoretical"]
    out += _gemm_lines(m["gemm_gflops"], t.get("gemm_gflops", {}), "GEMM")
    out += _bandwidth_lines(m["bandwidth_gbs"], t.get("bandwidth_gbs", {}),
                            ("dram", "triad", "copy", "llc"))
    if "small_gemm_overhead_s" in m:
        out.append(f"  small GEMM call  {m['small_gemm_overhead_s'] * 1e6:10.2f} us")
    out += _op_cost_lines(m.get("calibration", {}).get("ops"))
    gpu = m.get("gpu")
    if gpu:
        theory = t.get("gpu", {})
        out += _gemm_lines(gpu["gemm_gflops"], theory.get("gemm_gflops", {}), "GPU ")
        out += _bandwidth_lines(gpu["bandwidth_gbs"], theory.get("bandwidth_gbs", {}),
                                ("device", "host_to_device"))
    out += [""] + [f"assumed: {note_text(a)}" for a in result.assumptions]
    out += [f"not measured: {s.figure}: {note_text(s.reason)}" for s in result.not_measured]
    out += [f"warning: {note_text(w)}" for w in result.warnings]
    return "\n".join(out) + "\n"


def probe_html(result, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.probe_page``)."""
    from .html import probe_page

    return probe_page(result, command)


PROBE_FORMATS = {"table": probe_table, "json": probe_json, "html": probe_html}
