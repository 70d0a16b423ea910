"""analyze's and gemm's reports written out: JSON streamed GEMM by GEMM, a progress line before a
long per-row format, the other formats rendered whole."""

from __future__ import annotations

from .console import _Chunked, _command, _progress

#: Past this many GEMMs and ops in all, the per-row formats (JSON, CSV, HTML: every copy of a
#: repeated layer, where the table shows the first) take seconds to write (a 10,000-block
#: transformer's 100,000 rows: about 2.5-3.6 s of JSON on 2 cores), and the run says so first.
ROWS_SAID = 20_000


def _say_rows(reports: list, fmt: str) -> None:
    """A progress line on stderr before a per-row format of more than ``ROWS_SAID`` rows."""
    rows = sum(len(r.results) + len(r.ops) for r in reports)
    if fmt in ("json", "csv", "html") and rows > ROWS_SAID:
        _progress(f"writing {fmt} for {rows:,} GEMMs and ops (every copy of a repeated "
                  f"layer)...")


def _stream_json(report) -> None:
    """``report.to_dict()`` as JSON, its GEMMs and ops converted and written one at a time: the
    same text as json_output.to_json, without 300,000 dicts and a 200 MB string in memory at
    once. The header keys come from to_dict itself (on a one-row copy), so they cannot drift."""
    from dataclasses import replace

    from ..analysis.report import gemm_objects
    from ..output.json import write_json

    data = replace(report, results=report.results[:1], ops=report.ops[:1]).to_dict()
    data["warnings"] = list(report.warnings)  # a warning may count every GEMM (layout_warning)
    data["gemms"] = gemm_objects(report.results)
    data["ops"] = (result.to_dict() for result in report.ops)
    data["totals"] = report.totals
    with _Chunked() as out:
        write_json(data, out.write)


def _render_reports(reports: list, fmt: str, view=None) -> str:
    from ..output.json import to_json
    from ..output.report import REPORT_FORMATS


    if fmt == "json" and len(reports) > 1:
        return to_json([r.to_dict() for r in reports]) + "\n"
    from ..output.report import View

    view = view or View()
    if fmt == "html":  # one page for every device
        from ..output.html import report_page

        return report_page(reports, view, _command())
    if fmt == "csv":
        from ..output.report import reports_csv

        return reports_csv(reports, view)
    text = [REPORT_FORMATS[fmt](r, view) for r in reports]
    return ("\n" if fmt != "json" else "").join(text) + ("\n" if fmt == "json" else "")
