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


def _header(report: Report) -> str:
    net, hw = report.network, report.hardware
    return (f"{net.name} on {hw.name}: {report.dtype}, batch {net.batch}, {net.mode}\n"
            f"ridge {report.ridge:.1f} FLOP/B = dense peak {report.peak_flops_per_s / 1e12:g} "
            f"TFLOP/s / {report.bandwidth_bytes_per_s / 1e9:g} GB/s ({hw.origin})")


def _totals_line(report: Report) -> str:
    t = report.totals
    return (f"total: {si(t['flops'], 'FLOP')}, {si(t['bytes'], 'B')}, {seconds(t['time_s'])}; "
            f"{t['memory_bound_time_fraction']:.0%} of the time in memory-bound GEMMs")


def _notes(report: Report) -> list[str]:
    lines = []
    for r in report.results:
        lines += [f"  {r.gemm.name}: {text}" for text in r.warnings + r.advice]
    return lines


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


_CSV_FIELDS = ("name", "layer", "pass", "m", "n", "k", "dtype", "flops", "bytes", "intensity",
               "bound", "attainable_tflops", "time_s", "aligned", "min_compute_bound_batch",
               "warnings", "advice")


_CSV_CONTEXT = ("hardware", "batch", "mode")  # so rows of several reports share one table


def report_csv(report: Report) -> str:
    """One row per GEMM, raw numbers in SI units; warnings and advice joined with '; '."""
    return reports_csv([report])


def reports_csv(reports: list[Report]) -> str:
    """ONE table for one or several reports (``analyze --hw A --hw B``): a header, then a row per
    GEMM per report, each row starting with its hardware, batch and mode."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=_CSV_CONTEXT + _CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for report in reports:
        context = {"hardware": report.hardware.name, "batch": report.network.batch,
                   "mode": report.network.mode}
        for result in report.results:
            row = {key: value for key, value in result.to_dict().items() if key in _CSV_FIELDS}
            row["warnings"] = "; ".join(row["warnings"])
            row["advice"] = "; ".join(row["advice"])
            writer.writerow(context | row)
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
    return (f"<p><b>{html.escape(_header(report)).replace(chr(10), '</b><br>', 1)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            f"<p>{html.escape(_totals_line(report))}{shaded}</p>"
            + (f"<ul>{notes}</ul>" if notes else ""))


REPORT_FORMATS = {"table": report_table, "json": report_json, "csv": report_csv,
                  "markdown": report_markdown}
