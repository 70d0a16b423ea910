"""Turning results into text: table, CSV, Markdown, JSON, HTML. Display only; numbers stay raw
everywhere else. Prefixes are decimal (SI): 1 GB = 10^9 B, 1 TFLOP/s = 10^12 FLOP/s.
"""

from __future__ import annotations

import csv
import html
import io
import textwrap
from typing import TYPE_CHECKING

from .json_output import to_json

if TYPE_CHECKING:
    from .analysis import Report

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_PASS_SHORT = {"forward": "fwd", "backward-data": "bwd-data", "backward-weight": "bwd-wgt"}


def si(value: float, unit: str, digits: int = 3) -> str:
    """``si(4.29e9, "FLOP") == "4.29 GFLOP"``: decimal prefixes, ``digits`` significant digits."""
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def seconds(value: float) -> str:
    """A duration with the unit that keeps it readable: s, ms, us, ns."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} s"


def report_json(report: Report) -> str:
    return to_json(report.to_dict())


_COLUMNS = ("GEMM", "layer", "pass", "M", "N", "K", "FLOP", "bytes", "FLOP/B", "bound",
            "TFLOP/s", "time", "align")
_LEFT_COLUMNS = frozenset({0, 1, 2, 9, 12})  # text columns; numbers are right-aligned


def _row(report: Report, result) -> list[str]:
    g = result.gemm
    return [g.name, g.layer[:10], _PASS_SHORT[g.pass_], str(g.m), str(g.n), str(g.k),
            si(g.flops, ""), si(g.bytes, "B"), f"{g.intensity:.1f}", result.bound,
            f"{result.attainable_flops_per_s / 1e12:.3g}", seconds(result.time_s),
            "ok" if result.aligned else "NO"]


def precision_text(network) -> str:
    """The precision a report assumed, in words: operands, output, weight-gradient buffer."""
    text = f"A, B {network.dtype} -> C {network.c_dtype}"
    if network.mode != "train":
        return text
    if network.grad_accumulation:
        return text + (f"; weight gradients accumulate into {network.grad_accumulation} "
                       f"(C read and written)")
    return text + "; weight gradients written once (no accumulation buffer)"


def _header(report: Report) -> str:
    net, hw = report.network, report.hardware
    return (f"{net.name} on {hw.name}: {report.dtype}, batch {net.batch}, {net.mode}\n"
            f"precision: {precision_text(net)}\n"
            f"ridge {report.ridge:.1f} FLOP/B = dense peak {report.peak_flops_per_s / 1e12:g} "
            f"TFLOP/s / {report.bandwidth_bytes_per_s / 1e9:g} GB/s ({hw.origin})"
            + (_QUANTIZATION_LINE if getattr(report, "quantization", False) else ""))


_QUANTIZATION_LINE = ("\nquantization: on (compute-bound GEMM times divided by the tile/wave "
                      "efficiency of the best candidate tile, after split-K where chosen)")


def _totals_line(report: Report) -> str:
    t = report.totals
    return (f"total: {si(t['flops'], 'FLOP')}, {si(t['bytes'], 'B')}, {seconds(t['time_s'])}; "
            f"{t['memory_bound_time_fraction']:.0%} of the time in memory-bound GEMMs")


_TIER_REASON = {
    "error": "cuBLASLt requires multiples of {multiple} for {dtype}",
    "warning": "16-byte rule: multiples of {multiple} for {dtype} Tensor Cores",
    "advice": "128-byte tier: multiples of {multiple} run best here",
}


def _alignment_groups(report: Report) -> list[str]:
    """Alignment notes grouped by the dimension value they are about, most severe tier first:
    ``advice: width 1000 (fc2.out, fc3.in): MM2, MM3, MM4: pad to 1024 (...)``."""
    from .advisor import TIERS

    groups: dict[tuple, tuple[dict, dict, object]] = {}
    for result in report.results:
        for note in result.alignment:
            key = (TIERS.index(note.tier), note.value, note.multiple)
            label = "batch" if note.role == "batch" else f"{note.layer}.{note.role}"
            labels, gemms, _ = groups.setdefault(key, ({}, {}, note))
            labels[label] = gemms[note.gemm] = None
    lines = []
    for (_, value, _), (labels, gemms, note) in sorted(groups.items(), key=lambda i: i[0]):
        noun = "batch" if list(labels) == ["batch"] else (
            "width" if note.role in ("in", "out", "batch") else "dimension")
        where = "" if list(labels) == ["batch"] else f" ({', '.join(labels)})"
        reason = _TIER_REASON[note.tier].format(dtype=note.dtype, multiple=note.multiple)
        lines.append(f"{note.tier}: {noun} {value}{where}: {', '.join(gemms)}: "
                     f"pad to {note.pad_to} ({reason})")
    return lines


def _notes(report: Report) -> list[str]:
    """Warnings and advice as read: alignment grouped by dimension value and tier, then every
    other sentence once, with the GEMMs it is about (``MM4, MM5: no batch reaches ...``).
    JSON and CSV keep the per-GEMM lists."""
    others: dict[str, list[str]] = {}
    for r in report.results:
        aligned = {note.text for note in r.alignment}
        for text in r.warnings + r.advice:
            if text not in aligned:
                others.setdefault(text, []).append(r.gemm.name)
    return [f"  {line}" for line in _alignment_groups(report)] + [
        f"  {', '.join(names)}: {text}" for text, names in others.items()]


def report_table(report: Report) -> str:
    """A plain-text table that fits in 100 columns, with totals, warnings and advice below."""
    rows = [list(_COLUMNS)] + [_row(report, r) for r in report.results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if i in _LEFT_COLUMNS else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
             for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    notes = [wrapped for note in _notes(report) for wrapped in (
        textwrap.wrap(note, width=100, subsequent_indent=" " * 7) if len(note) > 100 else [note])]
    out = [_header(report), "", *lines, "", _totals_line(report)]
    if notes:
        out += ["", "warnings and advice:", *notes]
    return "\n".join(out) + "\n"


_CSV_FIELDS = ("name", "layer", "pass", "m", "n", "k", "dtype", "c_dtype", "c_read", "flops",
               "bytes", "bytes_a", "bytes_b", "bytes_c", "intensity", "bound",
               "attainable_tflops", "time_s", "aligned", "min_compute_bound_batch", "warnings",
               "advice")


def report_csv(report: Report) -> str:
    """One row per GEMM, raw numbers in SI units; warnings and advice joined with '; '."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=_CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for result in report.results:
        data = result.to_dict()
        row = {key: value for key, value in data.items() if key in _CSV_FIELDS}
        row.update({f"bytes_{op}": value for op, value in data["bytes_by_operand"].items()})
        row["warnings"] = "; ".join(row["warnings"])
        row["advice"] = "; ".join(row["advice"])
        writer.writerow(row)
    return buffer.getvalue()


def report_markdown(report: Report) -> str:
    """A GitHub-flavoured Markdown table with the header and totals as text around it."""
    rows = [_row(report, r) for r in report.results]
    lines = [_header(report).replace("\n", "  \n"), "",
             "| " + " | ".join(_COLUMNS) + " |",
             "|" + "|".join("---" if i in _LEFT_COLUMNS else "--:"
                            for i in range(len(_COLUMNS))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", _totals_line(report)]
    notes = _notes(report)
    if notes:
        lines += ["", *(f"- {note.strip()}" for note in notes)]
    return "\n".join(lines) + "\n"


def _html_cell(tag: str, text: str, column: int) -> str:
    align = "left" if column in _LEFT_COLUMNS else "right"
    return f'<{tag} style="text-align:{align}">{html.escape(text)}</{tag}>'


def report_html(report: Report) -> str:
    """An HTML table for Jupyter (``Report._repr_html_``): numbers right-aligned, memory-bound
    rows shaded (with dark text, so dark themes stay readable), warnings and advice below."""
    head = "".join(_html_cell("th", c, i) for i, c in enumerate(_COLUMNS))
    body = []
    for result in report.results:
        style = ' style="background:#fde0dc;color:#000"' if result.bound == "memory" else ""
        cells = "".join(_html_cell("td", c, i) for i, c in enumerate(_row(report, result)))
        body.append(f"<tr{style}>{cells}</tr>")
    notes = "".join(f"<li>{html.escape(n.strip())}</li>" for n in _notes(report))
    shaded = " (shaded rows: memory-bound)" if "memory" in {r.bound for r in report.results} else ""
    header = html.escape(_header(report)).replace(chr(10), "</b><br>", 1)
    return (f"<p><b>{header.replace(chr(10), '<br>')}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            f"<p>{html.escape(_totals_line(report))}{shaded}</p>"
            + (f"<ul>{notes}</ul>" if notes else ""))


REPORT_FORMATS = {"table": report_table, "json": report_json, "csv": report_csv,
                  "markdown": report_markdown}
